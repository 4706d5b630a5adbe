package telegram

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"
)

// TestReadUpdatesAnswer: getUpdates answers of every shape a Bot API
// server gives, read as a stream: updates kept byte for byte, the error
// fields read, an update past its bound standing in with what its start
// says, and what is not an answer said to be so.
func TestReadUpdatesAnswer(t *testing.T) {
	long := strings.Repeat("z", maxUpdateBytes)
	senderFirst := `{"update_id":9,"message":{"message_id":1,"from":{"id":42,"is_bot":false},"chat":{"id":42,"type":"private"},"text":"` + long + `"}}`
	senderLast := `{"update_id":10,"message":{"text":"` + long + `","from":{"id":42},"chat":{"id":42}}}`
	for _, tc := range []struct {
		name, answer string
		want         updatesAnswer
		bodies       []string
		err          error
	}{
		{"none", `{"ok":true,"result":[]}`, updatesAnswer{OK: true}, nil, nil},
		{"result first, white space", " {\n\"result\" : [ {\"update_id\":5,\"message\":{}} ] , \"ok\" : true }\n", updatesAnswer{OK: true},
			[]string{`{"update_id":5,"message":{}}`}, nil},
		{"brackets and quotes in a text", `{"ok":true,"result":[{"update_id":7,"message":{"text":"a \"]}\\\" [{b"}},{"update_id":8}]}`, updatesAnswer{OK: true},
			[]string{`{"update_id":7,"message":{"text":"a \"]}\\\" [{b"}}`, `{"update_id":8}`}, nil},
		{"rate limited", `{"ok":false,"error_code":429,"description":"Too Many Requests: retry after 3","parameters":{"retry_after":3}}`,
			updatesAnswer{ErrorCode: 429, Description: "Too Many Requests: retry after 3", Parameters: struct {
				RetryAfter int `json:"retry_after"`
			}{3}}, nil, nil},
		{"oversized, its sender first", `{"ok":true,"result":[` + senderFirst + `]}`,
			updatesAnswer{OK: true}, []string{fmt.Sprintf(`{"shelldon_oversized":{"bytes":%d,"from":42,"chat":42},"update_id":9}`, len(senderFirst))}, nil},
		{"oversized, its sender past the cut", `{"ok":true,"result":[` + senderLast + `]}`,
			updatesAnswer{OK: true}, []string{fmt.Sprintf(`{"shelldon_oversized":{"bytes":%d},"update_id":10}`, len(senderLast))}, nil},
		{"a proxy's page", `<html>Bad Gateway</html>`, updatesAnswer{}, nil, errNotAnswer},
		{"an update without an id", `{"ok":true,"result":[{"message":{}}]}`, updatesAnswer{}, nil, errNotAnswer},
		{"cut short", `{"ok":true,"result":[{"update_id":5`, updatesAnswer{}, nil, io.ErrUnexpectedEOF},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readUpdatesAnswer(strings.NewReader(tc.answer))
			if !errors.Is(err, tc.err) || (err == nil) != (tc.err == nil) {
				t.Fatalf("readUpdatesAnswer = %v, want %v", err, tc.err)
			}
			if err != nil {
				return
			}
			var bodies []string
			for _, it := range got.items {
				bodies = append(bodies, string(it.Body))
			}
			got.items = nil
			if !reflect.DeepEqual(got, tc.want) || strings.Join(bodies, "|") != strings.Join(tc.bodies, "|") {
				t.Errorf("readUpdatesAnswer = %+v with %q, want %+v with %q", got, bodies, tc.want, tc.bodies)
			}
		})
	}
}

// TestAnAnswerPastItsBoundIsReadInPart: an answer holding more updates
// than maxAnswerBytes keeps the first ones up to the bound, a success,
// and reads no further.
func TestAnAnswerPastItsBoundIsReadInPart(t *testing.T) {
	update := func(id int) string {
		b, _ := json.Marshal(map[string]any{"update_id": id, "message": map[string]string{"text": strings.Repeat("w", 200<<10)}})
		return string(b)
	}
	var parts []string
	for id := 1; id <= 40; id++ {
		parts = append(parts, update(id))
	}
	got, err := readUpdatesAnswer(strings.NewReader(`{"result":[` + strings.Join(parts, ",") + `],"ok":true}`))
	if err != nil {
		t.Fatal(err)
	}
	kept := 0
	for i, it := range got.items {
		kept += len(it.Body)
		if it.ID != int64(i+1) {
			t.Fatalf("update %d kept as id %d", i+1, it.ID)
		}
	}
	if !got.OK || len(got.items) >= 40 || kept < maxAnswerBytes || kept > maxAnswerBytes+maxUpdateBytes {
		t.Errorf("kept %d updates, %d bytes, ok %v; want the first ones up to %d bytes, a success", len(got.items), kept, got.OK, maxAnswerBytes)
	}
}
