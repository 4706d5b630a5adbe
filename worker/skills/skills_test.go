package skills

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestParse(t *testing.T) {
	tests := []struct {
		name, in        string
		wantName, wantD string
		wantErr         string
	}{
		{"plain", "---\nname: pdf-tools\ndescription: Fills and reads PDF forms.\n---\n# Body\n", "pdf-tools", "Fills and reads PDF forms.", ""},
		{"quoted", "---\nname: \"deploy\"\ndescription: 'Ships the site: it''s one command.'\nlicense: MIT\n---\n", "deploy", "Ships the site: it's one command.", ""},
		{"folded block", "---\nname: notes\ndescription: >\n  Keeps notes\n  in order.\nmetadata:\n  version: 1\n---\n", "notes", "Keeps notes in order.", ""},
		{"CRLF", "---\r\nname: crlf\r\ndescription: Windows lines.\r\n---\r\n", "crlf", "Windows lines.", ""},
		{"control characters made visible", "---\nname: esc\ndescription: red \x1b[31m text\n---\n", "esc", "", ""},
		{"no front matter", "# Just markdown\n", "", "", "no front matter"},
		{"unterminated", "---\nname: x\ndescription: y\n", "", "", "does not end"},
		{"no name", "---\ndescription: y\n---\n", "", "", "no name"},
		{"bad name", "---\nname: Bad_Name\ndescription: y\n---\n", "", "", "lower-case"},
		{"name too long", "---\nname: " + strings.Repeat("a", MaxName+1) + "\ndescription: y\n---\n", "", "", "lower-case"},
		{"no description", "---\nname: x\n---\n", "", "", "no description"},
		{"description too long", "---\nname: x\ndescription: " + strings.Repeat("d", MaxDescription+1) + "\n---\n", "", "", "over 1024"},
		{"not UTF-8", "---\nname: x\ndescription: \xff\n---\n", "", "", "UTF-8"},
	}
	for _, tt := range tests {
		name, desc, err := Parse([]byte(tt.in))
		if tt.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("%s: Parse(%q) = %q, %q, %v; want an error mentioning %q", tt.name, tt.in, name, desc, err, tt.wantErr)
			}
			continue
		}
		if err != nil || name != tt.wantName || (tt.wantD != "" && desc != tt.wantD) || strings.ContainsRune(desc, 0x1b) {
			t.Errorf("%s: Parse(%q) = %q, %q, %v; want %q, %q", tt.name, tt.in, name, desc, err, tt.wantName, tt.wantD)
		}
	}
}

// write makes the workspace files, relative to ws.
func write(t *testing.T, ws string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(ws, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func skill(name, desc string) string {
	return "---\nname: " + name + "\ndescription: " + desc + "\n---\nDo the thing.\n"
}

// TestListReadsOnlyWhatIsBeneathTheWorkspace: skills are listed by name;
// a folder whose SKILL.md is missing, wrong or not a file is a problem
// said, not a skill; a link out of the workspace is not followed, and a
// fifo does not hold the listing.
func TestListReadsOnlyWhatIsBeneathTheWorkspace(t *testing.T) {
	ws, outside := t.TempDir(), t.TempDir()
	write(t, ws, map[string]string{
		"skills/zeta/SKILL.md":      skill("zeta", "Last by name."),
		"skills/alpha/SKILL.md":     skill("alpha", "First by name."),
		"skills/alpha/run.sh":       "echo hi\n",
		"skills/wrong/SKILL.md":     skill("other", "Its name is not its folder's."),
		"skills/empty/README.md":    "no SKILL.md here",
		"skills/loose-file.md":      "not a folder",
		"skills/.hidden/SKILL.md":   skill("hidden", "Hidden folders are not skills."),
		"skills/api-token/SKILL.md": skill("api-token", "Named like a credential."),
	})
	write(t, outside, map[string]string{"evil/SKILL.md": skill("evil", "Outside the workspace.")})
	if err := os.Symlink(filepath.Join(outside, "evil"), filepath.Join(ws, "skills", "evil")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "skills", "linked"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "evil", "SKILL.md"), filepath.Join(ws, "skills", "linked", "SKILL.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(ws, "skills", "fifo"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(ws, "skills", "fifo", "SKILL.md"), 0o644); err != nil {
		t.Fatal(err)
	}

	found, problems, err := List(ws)
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(found); got != "[{alpha First by name. skills/alpha/SKILL.md} {zeta Last by name. skills/zeta/SKILL.md}]" {
		t.Errorf("List found %s", got)
	}
	joined := strings.Join(problems, "\n")
	for _, want := range []string{"skills/wrong/SKILL.md: its name", "skills/empty/SKILL.md", "skills/linked/SKILL.md", "skills/fifo/SKILL.md: not a regular file"} {
		if !strings.Contains(joined, want) {
			t.Errorf("problems %q do not mention %q", problems, want)
		}
	}
	if strings.Contains(joined+fmt.Sprint(found), "Outside the workspace") {
		t.Errorf("a link out of the workspace was followed: %v %q", found, problems)
	}
}

func TestListBounds(t *testing.T) {
	ws := t.TempDir()
	files := map[string]string{}
	for i := range MaxSkills + 3 {
		name := fmt.Sprintf("s%02d", i)
		files["skills/"+name+"/SKILL.md"] = skill(name, "Skill number "+name+".")
	}
	write(t, ws, files)
	found, problems, err := List(ws)
	if err != nil || len(found) != MaxSkills || len(problems) != 1 || !strings.Contains(problems[0], fmt.Sprintf("more than %d skills", MaxSkills)) {
		t.Errorf("List of %d skills = %d found, %q, %v; want %d and the rest said", MaxSkills+3, len(found), problems, err, MaxSkills)
	}
	if found, problems, err := List(t.TempDir()); err != nil || found != nil || problems != nil {
		t.Errorf("List of a workspace without skills/ = %v, %q, %v; want nothing", found, problems, err)
	}
}

func TestSectionStaysWithinItsBudget(t *testing.T) {
	var found []Skill
	for i := range MaxSkills {
		found = append(found, Skill{Name: fmt.Sprintf("s%02d", i), Description: strings.Repeat("d", 300), Path: fmt.Sprintf("skills/s%02d/SKILL.md", i)})
	}
	got := Section(found)
	if len(got) > PromptChars+400 {
		t.Errorf("Section of %d long skills is %d bytes, want about %d", len(found), len(got), PromptChars)
	}
	if !strings.Contains(got, "- s00: ") || !strings.Contains(got, "More skills") || !strings.Contains(got, "s31") {
		t.Errorf("Section = %q; want the first described and the last named", got)
	}
	if Section(nil) != "" {
		t.Error("Section of no skills is not empty")
	}
}
