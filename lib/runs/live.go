package runs

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// BoxInfo is runs/RUN/box.json: the supervisor's identity while the run is live.
type BoxInfo struct {
	Format    int       `json:"format"`
	PID       int       `json:"pid"`
	StartTime uint64    `json:"start_time"` // /proc/PID/stat field 22, clock ticks since boot
	BootID    string    `json:"boot_id"`
	Container string    `json:"container"`
	Worker    string    `json:"worker"`
	Run       string    `json:"run"`
	Task      string    `json:"task,omitempty"`
	Since     time.Time `json:"since"`
}

// SelfBoxInfo describes the calling process as a supervisor.
func SelfBoxInfo(worker, run, task string, now time.Time) (BoxInfo, error) {
	st, err := ProcStartTime(os.Getpid())
	if err != nil {
		return BoxInfo{}, err
	}
	boot, err := BootID()
	if err != nil {
		return BoxInfo{}, err
	}
	return BoxInfo{Format: 1, PID: os.Getpid(), StartTime: st, BootID: boot,
		Container: home.ContainerID(run), Worker: worker, Run: run, Task: task, Since: now.UTC()}, nil
}

// WriteBoxInfo writes box.json atomically into runDir.
func WriteBoxInfo(runDir string, b BoxInfo) error {
	data, err := json.Marshal(b)
	if err != nil {
		return err
	}
	return fsx.WriteFile(home.BoxJSON(runDir), append(data, '\n'), 0o644)
}

// ReadBoxInfo reads runDir/box.json. A missing file is os.ErrNotExist.
func ReadBoxInfo(runDir string) (BoxInfo, error) {
	var b BoxInfo
	data, err := os.ReadFile(home.BoxJSON(runDir))
	if err != nil {
		return b, err
	}
	if err := json.Unmarshal(data, &b); err != nil {
		return b, fmt.Errorf("%s: %v: %w", home.BoxJSON(runDir), err, errs.ErrRefused)
	}
	if b.Format != 1 {
		return b, fmt.Errorf("%s: unknown format %d: %w", home.BoxJSON(runDir), b.Format, errs.ErrRefused)
	}
	return b, nil
}

// Alive reports whether the supervisor b names is still running: same pid,
// same process start time, same boot.
func (b BoxInfo) Alive() bool {
	if b.PID <= 0 {
		return false
	}
	boot, err := BootID()
	if err != nil || boot != b.BootID {
		return false
	}
	st, err := ProcStartTime(b.PID)
	return err == nil && st == b.StartTime
}

// LiveBoxes returns the boxes of worker w whose supervisor is alive. A
// box.json it cannot read is taken as not live; commands that must not
// act while a box may be live use LiveBoxesStrict.
func LiveBoxes(w home.Worker) ([]BoxInfo, error) { return liveBoxes(w, false) }

// LiveBoxesStrict is LiveBoxes for commands that must never act while a
// box of w may be live (restore, worker rm): a box.json that exists but
// cannot be read is refused (exit 14, naming it) instead of being taken
// for a dead box.
func LiveBoxesStrict(w home.Worker) ([]BoxInfo, error) { return liveBoxes(w, true) }

func liveBoxes(w home.Worker, strict bool) ([]BoxInfo, error) {
	ents, err := os.ReadDir(w.Runs())
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var live []BoxInfo
	for _, e := range ents {
		if !e.IsDir() || !home.IsRunID(e.Name()) {
			continue
		}
		b, err := ReadBoxInfo(w.Run(e.Name()))
		if errors.Is(err, os.ErrNotExist) {
			continue // no box.json: not live (or not yet; callers allow for that)
		}
		if err != nil {
			if !strict {
				continue
			}
			return nil, errs.WithHint(fmt.Errorf("cannot tell whether run %s of worker %s is live: %w", e.Name(), w.Name, err),
				"look at the file; if no supervisor of that run is running (roster-box ps), move it aside")
		}
		if b.Alive() {
			live = append(live, b)
		}
	}
	return live, nil
}

// ProcStartTime returns field 22 of /proc/PID/stat (start time in clock ticks).
func ProcStartTime(pid int) (uint64, error) {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return 0, err
	}
	// comm (field 2) may hold spaces and parentheses: split after the last ")".
	i := bytes.LastIndexByte(data, ')')
	if i < 0 {
		return 0, fmt.Errorf("/proc/%d/stat: unexpected format", pid)
	}
	fields := strings.Fields(string(data[i+1:]))
	// fields[0] is field 3 (state); field 22 is fields[19].
	if len(fields) < 20 {
		return 0, fmt.Errorf("/proc/%d/stat: too few fields", pid)
	}
	if fields[0] == "Z" || fields[0] == "X" {
		return 0, fmt.Errorf("process %d is a zombie", pid)
	}
	return strconv.ParseUint(fields[19], 10, 64)
}

var bootID string

// BootID returns this boot's id (/proc/sys/kernel/random/boot_id).
func BootID() (string, error) {
	if bootID != "" {
		return bootID, nil
	}
	data, err := os.ReadFile("/proc/sys/kernel/random/boot_id")
	if err != nil {
		return "", err
	}
	bootID = strings.TrimSpace(string(data))
	return bootID, nil
}
