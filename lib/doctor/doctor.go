package doctor

import (
	"context"
	"net"
	"os"
	"time"

	"github.com/roster-sh/roster/lib/home"
)

// Levels of a Finding.
const (
	OK      = "ok"
	Warning = "warning"
	Problem = "problem"
)

// Finding is one thing checked.
type Finding struct {
	Check   string `json:"check"`             // host, cgroup, tree, vault, config, worker, git, chat, generated
	Level   string `json:"level"`             // ok, warning, problem
	Subject string `json:"subject,omitempty"` // a worker, an account, a file
	Message string `json:"message"`
	Fix     string `json:"fix,omitempty"`
}

// Options are where the checks look; the zero values are the real host's.
type Options struct {
	Home          home.Home
	Clean         bool                                                              // remove unused generated folders
	CgroupRoot    string                                                            // "" = /sys/fs/cgroup
	ProcRoot      string                                                            // "" = /proc
	ContainerRoot string                                                            // "" = home.ContainerRoot
	Dial          func(ctx context.Context, network, addr string) (net.Conn, error) // chat servers
	DialTimeout   time.Duration                                                     // 0 = 3 s
	Getenv        func(string) string
	Now           func() time.Time
}

func (o *Options) defaults() {
	if o.CgroupRoot == "" {
		o.CgroupRoot = "/sys/fs/cgroup"
	}
	if o.ProcRoot == "" {
		o.ProcRoot = "/proc"
	}
	if o.ContainerRoot == "" {
		o.ContainerRoot = home.ContainerRoot
	}
	if o.Dial == nil {
		o.Dial = (&net.Dialer{}).DialContext
	}
	if o.DialTimeout <= 0 {
		o.DialTimeout = 3 * time.Second
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.Now == nil {
		o.Now = time.Now
	}
}

// Report is every finding, in the order checked.
type Report struct {
	Findings []Finding `json:"findings"`
}

func (r *Report) add(check, level, subject, msg, fix string) {
	r.Findings = append(r.Findings, Finding{Check: check, Level: level, Subject: subject, Message: msg, Fix: fix})
}

// Count is how many findings have level.
func (r *Report) Count(level string) int {
	n := 0
	for _, f := range r.Findings {
		if f.Level == level {
			n++
		}
	}
	return n
}

// Run makes every check.
func Run(ctx context.Context, o Options) *Report {
	o.defaults()
	r := &Report{}
	checkHost(r, o)
	checkTree(r, o)
	org, specs := checkConfig(r, o)
	checkInotify(r, o, len(specs))
	checkWorkers(r, o, org, specs)
	checkChat(ctx, r, o, org)
	checkGenerated(r, o)
	return r
}
