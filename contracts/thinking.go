package contracts

// A model's private reasoning, when it writes it into its answer, comes
// between these tags (DeepSeek R1 and its distills, Qwen3, QwQ).
const (
	ThinkOpen  = "<think>"
	ThinkClose = "</think>"
)

// WithoutThinking is s with every <think>…</think> block removed, and
// everything from an unclosed <think> to the end, and everything up to a
// </think> that has no opening tag (some models leave the opening tag
// out). It searches again after each cut because the text either side of
// a cut can join into a new tag; the result contains neither tag. The
// broker applies it to every answer, so no reasoning reaches the worker
// as text; the worker applies it again before it parses a reply.
func WithoutThinking(s string) string {
	for {
		open := IndexFoldASCII(s, ThinkOpen)
		closing := IndexFoldASCII(s, ThinkClose)
		switch {
		case closing >= 0 && (open < 0 || closing < open):
			s = s[closing+len(ThinkClose):]
		case open < 0:
			return s
		case closing < 0:
			return s[:open]
		default:
			s = s[:open] + s[closing+len(ThinkClose):]
		}
	}
}

// IndexFoldASCII is strings.Index ignoring ASCII case. Unicode folding is
// avoided on purpose: it would match look-alikes such as the Kelvin sign
// for "k", whose byte length differs from the tag's.
func IndexFoldASCII(s, tag string) int {
	for i := 0; i+len(tag) <= len(s); i++ {
		if HasPrefixFoldASCII(s[i:], tag) {
			return i
		}
	}
	return -1
}

// HasPrefixFoldASCII is strings.HasPrefix ignoring ASCII case.
func HasPrefixFoldASCII(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		if lowerASCII(s[i]) != lowerASCII(prefix[i]) {
			return false
		}
	}
	return true
}

func lowerASCII(b byte) byte {
	if 'A' <= b && b <= 'Z' {
		return b + ('a' - 'A')
	}
	return b
}

// WithoutTagStart is s without a trailing start of one of tags (ignoring
// ASCII case): "Hello <thi" is "Hello ", since the next chunk of a
// streamed answer may make it a tag; a whole tag at the end stays, for
// its reader to handle.
func WithoutTagStart(s string, tags ...string) string {
	cut := len(s)
	for _, tag := range tags {
		for n := min(len(tag)-1, len(s)); n > 0; n-- {
			if HasPrefixFoldASCII(s[len(s)-n:], tag[:n]) {
				cut = min(cut, len(s)-n)
				break
			}
		}
	}
	return s[:cut]
}
