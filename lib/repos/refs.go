package repos

import (
	"path"
	"strings"
)

// Refusal kinds of a push (the ledger's refusal, the KIND git prints in
// "ng REF roster: KIND: reason").
const (
	RefuseRefNotGranted  = "ref_not_granted"  // outside the grant's push patterns
	RefuseRefProtected   = "ref_protected"    // a protected ref (not a gate)
	RefuseRefKind        = "ref_kind"         // tags, notes, HEAD, anything outside refs/heads/
	RefuseForce          = "force_refused"    // a non-fast-forward update not allowed
	RefuseDelete         = "delete_refused"   // a delete of a branch this worker did not create
	RefusePushCert       = "push_certificate" // a signed push
	RefuseShallow        = "shallow_push"     // a push from a shallow clone
	RefuseAtomic         = "atomic"           // refused with the rest of an all-or-nothing push
	RefuseGitModules     = "gitmodules"
	RefuseGitlink        = "gitlink"
	RefuseSymlink        = "symlink_escape"
	RefuseCIFile         = "ci_file"
	RefuseBlobTooLarge   = "blob_too_large"
	RefusePushTooLarge   = "push_too_large"
	RefuseTooManyFiles   = "too_many_files"
	RefuseSecret         = "secret"
	RefuseUpstream       = "upstream_rejected"
	RefuseNotFastForward = "not_fast_forward"
	RefuseFetchFirst     = "fetch_first"
	RefuseReadOnly       = "knowledge_read_only"
	RefuseRepoNotGranted = "repo_not_granted"
)

// Policy is what one grant lets a worker do to refs (docs/repos.md, "Ref
// rules").
type Policy struct {
	Push    []string // branch patterns (under refs/heads/) it may create or fast-forward
	Protect []string // never updated directly
	Force   string   // "own": non-fast-forward only on its own branches; "never"
	// Own tells the branches this worker created through roster (force
	// and delete are allowed there when Force is "own").
	Own func(branch string) bool
	// Gate: a protected ref becomes a gate instead of a refusal (host
	// repos).
	Gate bool
	// ReadOnly refuses every update (a channel run's knowledge).
	ReadOnly bool
}

// Verdict is the judge's answer for one command.
type Verdict struct {
	Command
	Gate   bool   // held for review, not landed (host repos' protected refs)
	Kind   string // "" = allowed
	Reason string
}

// OK tells an allowed (or gated) command.
func (v Verdict) OK() bool { return v.Kind == "" }

// JudgeRefs judges each of cmds against p. ff tells whether new descends
// from old (a fast-forward); it is asked only for an update of an
// existing branch. A push is all-or-nothing: when any command is refused,
// the others are refused too (RefuseAtomic, naming the one that was).
func JudgeRefs(p Policy, cmds []Command, ff func(old, new string) bool) []Verdict {
	out := make([]Verdict, len(cmds))
	first := -1
	for i, c := range cmds {
		out[i] = judgeRef(p, c, ff)
		if !out[i].OK() && first < 0 {
			first = i
		}
	}
	if first >= 0 {
		for i := range out {
			if out[i].OK() {
				out[i].Gate = false
				out[i].Kind = RefuseAtomic
				out[i].Reason = "not updated: the push is all-or-nothing and " + cmds[first].Ref + " was refused"
			}
		}
	}
	return out
}

func judgeRef(p Policy, c Command, ff func(old, new string) bool) Verdict {
	v := Verdict{Command: c}
	refuse := func(kind, reason string) Verdict { v.Kind, v.Reason = kind, reason; return v }
	if p.ReadOnly {
		return refuse(RefuseReadOnly, "this run may only fetch (it serves a channel or carries its content)")
	}
	branch, ok := strings.CutPrefix(c.Ref, "refs/heads/")
	if !ok || branch == "" || ValidBranch(branch) != nil {
		return refuse(RefuseRefKind, "only branches (refs/heads/...) may be pushed: no tags, notes, HEAD or other refs")
	}
	own := p.Own != nil && p.Own(branch)
	if c.Delete() {
		if own && !Match(p.Protect, branch) {
			return v
		}
		return refuse(RefuseDelete, "only a branch this worker created through roster may be deleted")
	}
	if Match(p.Protect, branch) {
		if p.Gate {
			if !c.Create() && !ff(c.Old, c.New) {
				return refuse(RefuseForce, branch+" is protected: only a fast-forward may be proposed")
			}
			v.Gate = true
			return v
		}
		return refuse(RefuseRefProtected, branch+" is protected: push a branch matching "+strings.Join(p.Push, ", ")+" and open a review")
	}
	if !Match(p.Push, branch) {
		return refuse(RefuseRefNotGranted, branch+" is not among the branches this worker may push ("+strings.Join(p.Push, ", ")+")")
	}
	if !c.Create() && !ff(c.Old, c.New) && !(p.Force == "own" && own) {
		if p.Force == "never" {
			return refuse(RefuseForce, "a non-fast-forward update is refused on every branch of this repo (force = \"never\")")
		}
		return refuse(RefuseForce, "a non-fast-forward update is allowed only on a branch this worker created through roster")
	}
	return v
}

// Match tells whether branch matches one of patterns (path.Match: * within
// one path part; a pattern ending in /* also matches deeper branches).
func Match(patterns []string, branch string) bool {
	for _, p := range patterns {
		if ok, _ := path.Match(p, branch); ok {
			return true
		}
		if prefix, ok := strings.CutSuffix(p, "/*"); ok && !strings.ContainsAny(prefix, "*?[") && strings.HasPrefix(branch, prefix+"/") {
			return true
		}
	}
	return false
}

// ValidBranch checks a branch name as git check-ref-format --branch would.
func ValidBranch(b string) error {
	if strings.ContainsRune(b, '*') {
		return errBadBranch
	}
	return validRefPart(b)
}
