package sandbox

import (
	"fmt"
	"strings"
)

// Text is the output as valid UTF-8 for a chat message or a model: bytes
// that are not UTF-8 become U+FFFD, and a cut is said at the top.
func (r Result) Text() string {
	text := strings.ToValidUTF8(string(r.Output), "\uFFFD")
	if r.OutputDropped > 0 {
		text = fmt.Sprintf("[… %d earlier bytes of output cut …]\n%s", r.OutputDropped, text)
	}
	return text
}
