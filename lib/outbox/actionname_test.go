package outbox

import (
	"regexp"
	"strings"
	"testing"
)

// TestActionNameIsTheRegexp: actionName accepts exactly what
// ^[1-9][0-9]{0,8}\.json$ does.
func TestActionNameIsTheRegexp(t *testing.T) {
	re := regexp.MustCompile(`^[1-9][0-9]{0,8}\.json$`)
	names := []string{"", ".json", "0.json", "1.json", "9.json", "10.json", "123456789.json", "1234567890.json",
		"01.json", "1.jsonx", "1.JSON", "1json", "a.json", "1a.json", "-1.json", "1.json.json", " 1.json", "1 .json",
		"999999999.json", "1.json\n", "\u0661.json", "tmp", "1.", "1.jso"}
	for i := 0; i < 2000; i++ {
		b := []byte(strings.Repeat("1", i%11))
		if i%3 == 0 && len(b) > 0 {
			b[i%len(b)] = byte('0' + i%10)
		}
		names = append(names, string(b)+".json", string(b))
	}
	for _, n := range names {
		if got, want := actionName(n), re.MatchString(n); got != want {
			t.Errorf("actionName(%q) = %v, the regexp says %v", n, got, want)
		}
	}
}
