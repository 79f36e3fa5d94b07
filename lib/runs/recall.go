package runs

import (
	"encoding/json"
	"fmt"
	"os"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/home"
)

// RecallPart is one part of a briefing and why it was included
// (runs/RUN/recall.json, written by the supervisor).
type RecallPart struct {
	Part   string `json:"part"`
	Source string `json:"source"`
	Why    string `json:"why"`
	Bytes  int    `json:"bytes,omitempty"`
}

// ReadRecall reads runDir/recall.json. It accepts {"format":1,"parts":[...]}
// and, for each part, "part" (or "name"/"title"), "source" and "why" (or
// "reason"); anything else in a part is ignored. A missing file is
// os.ErrNotExist; an unreadable one is refused (exit 14).
func ReadRecall(runDir string) ([]RecallPart, error) {
	path := home.Recall(runDir)
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseRecall(path, data)
}

// ParseRecall parses the text of a recall.json; path names it in errors.
func ParseRecall(path string, data []byte) ([]RecallPart, error) {
	var f struct {
		Format int               `json:"format"`
		Parts  []json.RawMessage `json:"parts"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: %v", path, err))
	}
	if f.Format != 1 {
		return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: unknown format %d", path, f.Format))
	}
	out := make([]RecallPart, 0, len(f.Parts))
	for i, raw := range f.Parts {
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, errs.New(errs.ErrRefused, fmt.Sprintf("%s: part %d: %v", path, i+1, err))
		}
		p := RecallPart{
			Part:   firstString(m, "part", "name", "title", "section"),
			Source: firstString(m, "source", "from"),
			Why:    firstString(m, "why", "reason"),
		}
		if n, ok := m["bytes"].(float64); ok {
			p.Bytes = int(n)
		}
		out = append(out, p)
	}
	return out, nil
}

func firstString(m map[string]any, keys ...string) string {
	for _, k := range keys {
		if s, ok := m[k].(string); ok {
			return s
		}
	}
	return ""
}
