package tms

import "testing"

func TestDiffFilesNamesWhatDiffers(t *testing.T) {
	a := &File{Tasks: []Task{{ID: "t-a", Text: "x"}, {ID: "t-b"}}, Templates: []Template{{ID: "n", Cron: "@daily"}}}
	same := &File{Tasks: []Task{{ID: "t-b"}, {ID: "t-a", Text: "x"}}, Templates: []Template{{ID: "n", Cron: "@daily"}}}
	for _, c := range []struct {
		b    *File
		want string
	}{
		{same, ""},
		{&File{Tasks: []Task{{ID: "t-a", Text: "x"}}, Templates: same.Templates}, "task t-b missing"},
		{&File{Tasks: []Task{{ID: "t-a", Text: "y"}, {ID: "t-b"}}, Templates: same.Templates}, "task t-a differs"},
		{&File{Tasks: append(append([]Task{}, same.Tasks...), Task{ID: "t-c"}), Templates: same.Templates}, "task t-c not in the journal"},
		{&File{Tasks: same.Tasks, Templates: []Template{{ID: "n", Cron: "@hourly"}}}, "template n differs"},
		{&File{Tasks: same.Tasks}, "template n missing"},
	} {
		if got := diffFiles(a, c.b); got != c.want {
			t.Errorf("diffFiles = %q, want %q", got, c.want)
		}
	}
}
