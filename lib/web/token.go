package web

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/roster-sh/roster/lib/errs"
	"github.com/roster-sh/roster/lib/fsx"
	"github.com/roster-sh/roster/lib/home"
)

// tokenBytes is the token's entropy: 32 random bytes, 64 hex digits.
const tokenBytes = 32

// LoadToken returns the web token of h, making it at the first start
// (made true): 64 hex digits in $ROSTER_HOME/web-token, mode 0600,
// written beside and linked into place so that two first starts cannot
// both make one and a crash leaves no half-written token. A token file
// that others may read, or that is not a token, is refused and left as it
// is.
func LoadToken(h home.Home) (token string, made bool, err error) {
	path := h.WebToken()
	tok, err := readToken(path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		return tok, false, err
	}
	if tok, err = makeToken(path); err != nil {
		if errors.Is(err, os.ErrExist) { // another start made it first
			tok, err = readToken(path)
			return tok, false, err
		}
		return "", false, err
	}
	return tok, true, nil
}

func readToken(path string) (string, error) {
	f, err := fsx.OpenRegular(path)
	if err != nil {
		return "", err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return "", err
	}
	if fi.Mode().Perm()&0o077 != 0 {
		return "", errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: mode %04o: others may read the web token", path, fi.Mode().Perm())),
			"chmod 600 "+path+" (or remove it: the next start makes a new one)")
	}
	b, err := io.ReadAll(io.LimitReader(f, 256))
	if err != nil {
		return "", err
	}
	tok := strings.TrimSpace(string(b))
	if _, err := hex.DecodeString(tok); err != nil || len(tok) != 2*tokenBytes {
		return "", errs.WithHint(errs.New(errs.ErrRefused, fmt.Sprintf("%s: not a web token (64 hex digits)", path)),
			"remove it: the next start makes a new one")
	}
	return tok, nil
}

func makeToken(path string) (string, error) {
	b := make([]byte, tokenBytes)
	if _, err := rand.Read(b); err != nil {
		return "", err
	}
	tok := hex.EncodeToString(b)
	tmp := path + ".tmp-" + hex.EncodeToString(b[:4])
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp)
	_, err = f.WriteString(tok + "\n")
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", err
	}
	if err := os.Link(tmp, path); err != nil {
		return "", err
	}
	return tok, fsx.SyncDir(filepath.Dir(path))
}
