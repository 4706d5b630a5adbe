package setup

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/BurntSushi/toml"

	"shelldon/config"
)

// SetProvider returns the configuration file old with p as its first
// [[provider]] table: a table of the same name is replaced where it
// stands, and moved first; the other tables, keys and comments are kept
// as written. The result must still parse as TOML.
func SetProvider(old []byte, p config.Provider) ([]byte, error) {
	if len(old) > MaxConfigBytes {
		return nil, fmt.Errorf("the configuration is over %d bytes; setup edits only a file of that size", MaxConfigBytes)
	}
	if _, err := toml.Decode(string(old), new(map[string]any)); err != nil {
		return nil, fmt.Errorf("the configuration is not valid TOML, so setup leaves it alone: %w", err)
	}
	src := lines(old)
	table := providerTable(p)
	var out []string
	inserted := false
	for i := 0; i < len(src); {
		if !isProviderHeader(src[i]) {
			out = append(out, src[i])
			i++
			continue
		}
		end := tableEnd(src, i)
		if !inserted {
			out = append(out, table...)
			out = append(out, "")
			inserted = true
		}
		if name, err := tableName(src[i:end]); err != nil || name != p.Name {
			out = append(out, src[i:end]...)
		} else if len(out) > 0 && out[len(out)-1] == "" && end < len(src) && src[end] == "" {
			end++ // the replaced table's blank line after it
		}
		i = end
	}
	if !inserted {
		if len(out) > 0 && out[len(out)-1] != "" {
			out = append(out, "")
		}
		out = append(out, table...)
	}
	for len(out) > 0 && out[len(out)-1] == "" {
		out = out[:len(out)-1] // a replaced table was the last
	}
	text := strings.Join(out, "\n") + "\n"
	if _, err := toml.Decode(text, new(map[string]any)); err != nil {
		return nil, fmt.Errorf("setting [[provider]] %q would break the configuration, so setup leaves it alone: %w", p.Name, err)
	}
	return []byte(text), nil
}

// providerTable is p as setup writes it: a name, where, which model, and
// the credential file that holds its key.
func providerTable(p config.Provider) []string {
	t := []string{
		"[[provider]]",
		"name = " + strconv.Quote(p.Name),
		"base_url = " + strconv.Quote(p.BaseURL),
		"model = " + strconv.Quote(p.Model),
	}
	if p.APIKeyCredential != "" {
		t = append(t, "api_key_credential = "+strconv.Quote(p.APIKeyCredential))
	}
	return t
}

func isProviderHeader(line string) bool {
	h := strings.ReplaceAll(strings.TrimSpace(stripComment(line)), " ", "")
	return h == "[[provider]]"
}

// tableEnd is the index of the first line after the table whose header
// is at start: the next header, or the end. Comments just before the next
// header belong to it.
func tableEnd(src []string, start int) int {
	end := start + 1
	for end < len(src) && !strings.HasPrefix(strings.TrimSpace(src[end]), "[") {
		end++
	}
	for end > start+1 && strings.HasPrefix(strings.TrimSpace(src[end-1]), "#") {
		end--
	}
	return end
}

// tableName is the name key of one [[provider]] table's lines.
func tableName(table []string) (string, error) {
	var doc struct {
		Provider []struct {
			Name string `toml:"name"`
		} `toml:"provider"`
	}
	if _, err := toml.Decode(strings.Join(table, "\n"), &doc); err != nil || len(doc.Provider) != 1 {
		return "", fmt.Errorf("not one [[provider]] table: %v", err)
	}
	return doc.Provider[0].Name, nil
}

// stripComment is line without a comment that starts outside a string.
// Only header lines are asked, which hold no strings.
func stripComment(line string) string {
	before, _, _ := strings.Cut(line, "#")
	return before
}
