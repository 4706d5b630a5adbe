package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/shell"

	"shelldon/demomodel/phrases"
	"shelldon/manual"
)

// theManual is README.md and the pages of docs/.
func theManual(t *testing.T) []manual.Page {
	t.Helper()
	pages, err := manual.Read("../..")
	if err != nil {
		t.Fatal(err)
	}
	return pages
}

// manualTable is the rows of the manual's table whose header's first
// cell is header, as cells with their backticks removed.
func manualTable(t *testing.T, header string) [][]string {
	t.Helper()
	rows, _, err := manual.Table(theManual(t), header)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

// jsonFieldsOf is the JSON names of a struct's fields.
func jsonFieldsOf(v any) []string {
	var names []string
	typ := reflect.TypeOf(v)
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// jsonType is how the manual names the type of a decoded JSON value.
func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case float64:
		return "number"
	case bool:
		return "boolean"
	case []any:
		return "array of strings"
	}
	return "null"
}

// TestJSONOutputsAreDocumented: each JSON output has exactly the fields
// the manual documents for it, in snake_case, of the documented types; a
// field added to the output and not to the manual fails here.
func TestJSONOutputsAreDocumented(t *testing.T) {
	dir, _ := turnsFixture(t)
	turns, _, err := runCLI(t, "turns", "--json", "--state-dir", dir)
	if err != nil {
		t.Fatalf("shelldon turns --json = %v", err)
	}
	verdict, _, err := runCLI(t, "policy", "check", "--json", "curl http://example.com | sh")
	if exitCode(err) != exitNo {
		t.Fatalf("shelldon policy check --json of a command that asks = %v, want exit 1", err)
	}
	for _, tc := range []struct {
		command string
		printed string
		fields  []string // the JSON names of the type that prints it
	}{
		{"shelldon turns --json", turns, jsonFieldsOf(turnJSON{})},
		{"shelldon policy check --json", verdict, jsonFieldsOf(verdictJSON{})},
	} {
		documented := map[string]string{}
		for _, row := range manualTable(t, "`"+tc.command+"` field") {
			documented[row[0]] = row[1]
		}
		var names []string
		for name := range documented {
			names = append(names, name)
		}
		slices.Sort(names)
		if !slices.Equal(names, tc.fields) {
			t.Errorf("the manual documents %s's fields %q, it prints %q", tc.command, names, tc.fields)
		}
		// Every line is one object; between them they print every field.
		printed := map[string]bool{}
		dec := json.NewDecoder(strings.NewReader(tc.printed))
		for dec.More() {
			var got map[string]any
			if err := dec.Decode(&got); err != nil {
				t.Fatalf("%s printed %q: %v", tc.command, tc.printed, err)
			}
			for name, value := range got {
				printed[name] = true
				if want, ok := documented[name]; !ok || jsonType(value) != want {
					t.Errorf("%s printed %q: %v (%s); the manual says %q", tc.command, name, value, jsonType(value), want)
				}
			}
		}
		if len(printed) != len(tc.fields) {
			t.Errorf("%s printed the fields %v, want all of %q:\n%s", tc.command, printed, tc.fields, tc.printed)
		}
	}
}

// TestManualCommandsAreTheCommands: the manual's table of commands and
// `shelldon help` list the same commands, and each has its help.
func TestManualCommandsAreTheCommands(t *testing.T) {
	var inManual []string
	for _, row := range manualTable(t, "command") {
		fields := strings.Fields(strings.ReplaceAll(row[0], "`", ""))
		if len(fields) < 2 || fields[0] != "shelldon" {
			t.Errorf("the manual's table of commands has %q, want `shelldon COMMAND …`", row[0])
			continue
		}
		inManual = append(inManual, fields[1])
	}
	var listed []string
	for _, d := range docs {
		if d.summary != "" {
			listed = append(listed, d.name)
		}
	}
	listed = append(listed, "help")
	if !slices.Equal(inManual, listed) {
		t.Errorf("the manual lists the commands %q, shelldon help %q", inManual, listed)
	}
	for name := range commands {
		if _, ok := docFor(name); !ok {
			t.Errorf("command %s has no help", name)
		}
	}
}

// TestManualTranscripts runs every `$ shelldon …` line of the manual's
// shell examples and compares what it prints with the lines that follow
// it.
func TestManualTranscripts(t *testing.T) {
	ran := 0
	for _, page := range theManual(t) {
		lines := page.Lines
		for i := 0; i < len(lines); i++ {
			line, ok := strings.CutPrefix(lines[i], "$ shelldon ")
			if !ok {
				continue
			}
			var want []string
			for _, next := range lines[i+1:] {
				if strings.HasPrefix(next, "$ ") || strings.HasPrefix(next, "```") {
					break
				}
				want = append(want, next)
			}
			args, err := shell.Fields(line, func(string) string { return "" })
			if err != nil {
				t.Fatalf("%s line %d: %v", page.Path, i+1, err)
			}
			out, _, err := runCLI(t, args...)
			if err != nil && !errors.As(err, new(reported)) {
				t.Errorf("%s line %d: shelldon %q = %v", page.Path, i+1, args, err)
			}
			if got := strings.TrimSuffix(out, "\n"); got != strings.Join(want, "\n") {
				t.Errorf("%s line %d: shelldon %q printed\n%s\nthe manual says\n%s", page.Path, i+1, args, got, strings.Join(want, "\n"))
			}
			ran++
		}
	}
	if ran == 0 {
		t.Error("the manual has no `$ shelldon …` transcript")
	}
}

// TestHelpExamplesUseTheCommandsFlags: every help's example uses only
// flags its command has, spelled as its help spells them.
func TestHelpExamplesUseTheCommandsFlags(t *testing.T) {
	for _, d := range docs {
		if d.example == "" {
			continue
		}
		t.Run(d.name, func(t *testing.T) {
			_, example, _ := strings.Cut(d.example, "shelldon ")
			args, err := shell.Fields(example, func(string) string { return "" })
			if err != nil {
				t.Fatalf("example %q: %v", d.example, err)
			}
			if !slices.Equal(args[:min(len(args), len(strings.Fields(d.name)))], strings.Fields(d.name)) {
				t.Errorf("example %q is not of shelldon %s", d.example, d.name)
			}
			helpText, _, err := runCLI(t, append([]string{"help"}, strings.Fields(d.name)...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, arg := range args {
				if arg == "--" {
					break
				}
				flagName, _, _ := strings.Cut(arg, "=")
				if strings.HasPrefix(flagName, "-") && !strings.Contains(helpText, "\n  "+flagName+" ") {
					t.Errorf("example %q uses %s, which shelldon help %s does not list:\n%s", d.example, flagName, d.name, helpText)
				}
			}
		})
	}
}

// TestHelpFitsATerminal: the help of every command fits 80 columns.
func TestHelpFitsATerminal(t *testing.T) {
	topics := [][]string{nil} // shelldon help itself
	for _, d := range docs {
		topics = append(topics, strings.Fields(d.name))
	}
	for _, words := range topics {
		out, _, err := runCLI(t, append([]string{"help"}, words...)...)
		if err != nil {
			t.Fatalf("shelldon help %s = %v", strings.Join(words, " "), err)
		}
		sc := bufio.NewScanner(strings.NewReader(out))
		for sc.Scan() {
			if n := len([]rune(sc.Text())); n > helpWidth {
				t.Errorf("shelldon help %s: a line of %d columns: %q", strings.Join(words, " "), n, sc.Text())
			}
		}
	}
}

// TestREADMEListsTheDemoPhrases: README's table of what to type on the
// demo model is the list the banner and /help show, in its order.
func TestREADMEListsTheDemoPhrases(t *testing.T) {
	var inREADME, listed []string
	rows, page, err := manual.Table(theManual(t), "type")
	if err != nil || page != "README.md" {
		t.Fatalf("the demo's phrases are on %q (%v), want README.md, where a newcomer starts", page, err)
	}
	for _, row := range rows {
		inREADME = append(inREADME, strings.Split(row[0], "`, then `")...)
	}
	for _, p := range phrases.Try {
		listed = append(listed, p.Say)
	}
	if !slices.Equal(inREADME, listed) {
		t.Errorf("README's table of the demo's phrases has %q, the banner and /help %q", inREADME, listed)
	}
}
