package skills

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"sort"
	"strings"
	"syscall"
	"unicode/utf8"

	"shelldon/beneath"
	"shelldon/daemon/visible"
	"shelldon/policy"
)

// PromptChars bounds the prompt's skills section; past it, the rest are
// named only.
const PromptChars = 4000

// Bounds of what is read and listed.
const (
	// Dir is the skills' folder in the workspace, and File a skill's
	// instructions, with its front matter (policy names them).
	Dir  = policy.SkillsDir
	File = policy.SkillFile
	// MaxSkills bounds the skills listed; folders past it (by name) are
	// reported, not read.
	MaxSkills = 32
	// MaxName and MaxDescription bound a skill's front matter, as the
	// Agent Skills format does.
	MaxName        = 64
	MaxDescription = 1024
	// maxHead is how much of a SKILL.md is read for its front matter.
	maxHead = 8 << 10
	// maxEntries bounds the entries of skills/ looked at.
	maxEntries = 1024
)

// Skill is one skill as a turn's prompt names it.
type Skill struct {
	Name, Description string
	// Path is its SKILL.md relative to the workspace, as read_file takes it.
	Path string
}

// List reads the skills under workspace's skills/ folder, sorted by
// name. A folder whose SKILL.md is missing or does not read is left out
// and said in problems; a workspace without skills/ has none.
func List(workspace string) (found []Skill, problems []string, err error) {
	root, err := beneath.Open(workspace)
	if err != nil {
		return nil, nil, fmt.Errorf("skills: open the workspace: %w", err)
	}
	defer root.Close()
	entries, err := root.ReadDir(Dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("skills: read %s/: %w", Dir, err)
	}
	sort.Slice(entries, func(i, j int) bool { return entries[i].Name() < entries[j].Name() })
	if len(entries) > maxEntries {
		problems = append(problems, fmt.Sprintf("%s/ holds %d entries; only the first %d by name are looked at", Dir, len(entries), maxEntries))
		entries = entries[:maxEntries]
	}
	for _, e := range entries {
		// A link is not followed: ReadDir's type is the entry's own.
		if !e.IsDir() || strings.HasPrefix(e.Name(), ".") || policy.DeniedName(e.Name()) {
			continue
		}
		if len(found) == MaxSkills {
			problems = append(problems, fmt.Sprintf("more than %d skills; %s and the ones after it are left out", MaxSkills, visible.Line(e.Name())))
			break
		}
		path := Dir + "/" + e.Name() + "/" + File
		head, err := readHead(root, path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", visible.Line(path), err))
			continue
		}
		name, description, err := Parse(head)
		if err == nil && name != e.Name() {
			err = fmt.Errorf("its name %q is not its folder's, %q", visible.Line(name), visible.Line(e.Name()))
		}
		if err != nil {
			problems = append(problems, fmt.Sprintf("%s: %v", visible.Line(path), err))
			continue
		}
		found = append(found, Skill{Name: name, Description: description, Path: path})
	}
	return found, problems, nil
}

// readHead reads the start of a regular file beneath root, without
// following a link.
func readHead(root *beneath.Root, rel string) ([]byte, error) {
	// O_NONBLOCK, so that a fifo planted there cannot hold the open.
	f, err := root.OpenFile(rel, syscall.O_RDONLY|syscall.O_NONBLOCK|syscall.O_NOCTTY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, errors.New("not a regular file")
	}
	return io.ReadAll(io.LimitReader(f, maxHead))
}

// Parse reads a SKILL.md's front matter: the name (lower-case letters,
// digits and hyphens) and the description. Of YAML it reads what front
// matter uses: `key: value` lines, a value plain, single- or
// double-quoted, or a block (`>` or `|`) of the indented lines after it;
// other keys are ignored. The description is made one visible line.
func Parse(data []byte) (name, description string, err error) {
	if !utf8.Valid(data) {
		return "", "", errors.New("not UTF-8")
	}
	text := strings.ReplaceAll(string(data), "\r\n", "\n")
	rest, ok := strings.CutPrefix(text, "---\n")
	if !ok {
		return "", "", errors.New("no front matter: it must start with a line ---")
	}
	matter, _, ok := strings.Cut(rest, "\n---")
	if !ok {
		return "", "", fmt.Errorf("the front matter does not end (a line --- within the first %d KiB)", maxHead>>10)
	}
	fields := frontMatter(matter)
	name, description = fields["name"], strings.Join(strings.Fields(visible.Line(fields["description"])), " ")
	switch {
	case name == "":
		return "", "", errors.New("no name in the front matter")
	case !validName(name):
		return "", "", fmt.Errorf("name %q: use at most %d lower-case letters, digits and hyphens", visible.Line(name), MaxName)
	case description == "":
		return "", "", errors.New("no description in the front matter: it says when to use the skill")
	case utf8.RuneCountInString(description) > MaxDescription:
		return "", "", fmt.Errorf("a description of %d characters, over %d", utf8.RuneCountInString(description), MaxDescription)
	}
	return name, description, nil
}

// frontMatter reads the top-level keys of matter.
func frontMatter(matter string) map[string]string {
	fields := map[string]string{}
	lines := strings.Split(matter, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || line[0] == ' ' || line[0] == '\t' || line[0] == '#' {
			continue
		}
		key, value, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		key, value = strings.TrimSpace(key), strings.TrimSpace(value)
		switch {
		case strings.HasPrefix(value, ">") || strings.HasPrefix(value, "|"):
			var block []string
			for i+1 < len(lines) && (lines[i+1] == "" || lines[i+1][0] == ' ' || lines[i+1][0] == '\t') {
				i++
				block = append(block, strings.TrimSpace(lines[i]))
			}
			value = strings.Join(block, " ")
		case len(value) >= 2 && value[0] == '"' && value[len(value)-1] == '"':
			value = strings.ReplaceAll(value[1:len(value)-1], `\"`, `"`)
		case len(value) >= 2 && value[0] == '\'' && value[len(value)-1] == '\'':
			value = strings.ReplaceAll(value[1:len(value)-1], "''", "'")
		}
		if _, seen := fields[key]; !seen {
			fields[key] = strings.TrimSpace(value)
		}
	}
	return fields
}

func validName(name string) bool {
	if len(name) > MaxName || strings.HasPrefix(name, "-") || strings.HasSuffix(name, "-") || strings.Contains(name, "--") {
		return false
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return false
		}
	}
	return true
}

// Section is the prompt's part that tells the model of found, within
// PromptChars: each skill's name, description and SKILL.md, and past the
// budget the rest by name; "" for none.
func Section(found []Skill) string {
	if len(found) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Instructions for tasks, kept in the workspace. When a task matches a skill, read its SKILL.md with read_file first and follow it; its scripts run as any command does.")
	var unlisted []string
	for _, s := range found {
		line := fmt.Sprintf("\n- %s: %s (%s)", s.Name, s.Description, s.Path)
		if len(unlisted) > 0 || b.Len()+len(line) > PromptChars {
			unlisted = append(unlisted, s.Name)
			continue
		}
		b.WriteString(line)
	}
	if len(unlisted) > 0 {
		fmt.Fprintf(&b, "\nMore skills, described in their SKILL.md under %s/: %s", Dir, strings.Join(unlisted, ", "))
	}
	return b.String()
}
