package telegram

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"shelldon/contracts"
	"shelldon/daemon/hub"
	"shelldon/daemon/hub/hubtest"
)

const (
	waitLimit = 10 * time.Second
	token     = "123:test"
	owner     = 42
	stranger  = 666
)

type apiCall struct {
	Method string
	Form   map[string]string
}

// fakeAPI is a Bot API server: it hands out scripted updates and records
// every other call.
type fakeAPI struct {
	srv      *httptest.Server
	updates  chan string
	polls    chan int64
	mu       sync.Mutex
	calls    []apiCall
	consumed map[int]bool
	called   chan struct{}
}

func startAPI(t *testing.T) *fakeAPI {
	f := &fakeAPI{updates: make(chan string, 16), polls: make(chan int64, 64), consumed: map[int]bool{}, called: make(chan struct{}, 1)}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fakeAPI) serve(w http.ResponseWriter, r *http.Request) {
	method, ok := strings.CutPrefix(r.URL.Path, "/bot"+token+"/")
	if !ok {
		http.NotFound(w, r)
		return
	}
	form := map[string]string{}
	if r.ParseMultipartForm(1<<20) == nil {
		for k, v := range r.MultipartForm.Value {
			form[k] = v[0]
		}
	}
	reply := func(result string) { fmt.Fprintf(w, `{"ok":true,"result":%s}`, result) }
	switch method {
	case "getMe":
		reply(`{"id":123,"is_bot":true,"first_name":"shelldon","username":"shelldon_bot"}`)
		return
	case "getUpdates":
		offset, _ := strconv.ParseInt(form["offset"], 10, 64)
		select {
		case f.polls <- offset:
		default:
		}
		select {
		case u := <-f.updates:
			reply(u)
		case <-r.Context().Done():
			reply(`[]`)
		}
		return
	}
	f.mu.Lock()
	f.calls = append(f.calls, apiCall{method, form})
	f.mu.Unlock()
	select {
	case f.called <- struct{}{}:
	default:
	}
	switch method {
	case "answerCallbackQuery":
		reply(`true`)
	default:
		text, _ := json.Marshal(form["text"])
		reply(fmt.Sprintf(`{"message_id":9,"date":1,"chat":{"id":%s,"type":"private"},"text":%s}`, form["chat_id"], text))
	}
}

func (f *fakeAPI) has(method string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, c := range f.calls {
		if c.Method == method {
			return true
		}
	}
	return false
}

// next waits for the first call of method not yet taken.
func (f *fakeAPI) next(t *testing.T, method string) apiCall {
	t.Helper()
	deadline := time.After(waitLimit)
	for {
		f.mu.Lock()
		for i, c := range f.calls {
			if c.Method == method && !f.consumed[i] {
				f.consumed[i] = true
				f.mu.Unlock()
				return c
			}
		}
		f.mu.Unlock()
		select {
		case <-f.called:
		case <-deadline:
			t.Fatalf("no %s call arrived", method)
		}
	}
}

func (f *fakeAPI) push(updates ...string) { f.updates <- "[" + strings.Join(updates, ",") + "]" }

func textUpdate(id, from int64, text string) string {
	return fmt.Sprintf(`{"update_id":%d,"message":{"message_id":%d,"date":1,"chat":{"id":%d,"type":"private"},"from":{"id":%d,"is_bot":false,"first_name":"x"},"text":%q}}`, id, id, from, from, text)
}

type rig struct {
	api     *fakeAPI
	core    *hub.Hub
	inbox   chan contracts.Envelope
	tr      *Transport
	offsets OffsetStore
}

func start(t *testing.T, savedOffset int64) *rig {
	t.Helper()
	r := &rig{api: startAPI(t), inbox: make(chan contracts.Envelope, 16)}
	joined := make(chan struct{}, 4)
	var socket string
	r.core, socket, _ = hubtest.Serve(t, "", hub.Config{Core: r.inbox, OnJoin: func(*hub.Peer) { joined <- struct{}{} }})
	r.offsets = FileOffsets(filepath.Join(t.TempDir(), "offset"))
	if savedOffset != 0 {
		if err := r.offsets.Save(savedOffset); err != nil {
			t.Fatal(err)
		}
	}
	var err error
	r.tr, err = New(Config{Token: token, APIURL: r.api.srv.URL, AllowedIDs: []int64{owner}, Socket: socket, MaxFrame: 1 << 20, Offsets: r.offsets})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.tr.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run = %v, want nil after cancel", err)
			}
		case <-time.After(waitLimit):
			t.Error("Run did not return after cancel")
		}
	})
	select {
	case <-joined:
	case <-time.After(waitLimit):
		t.Fatal("the transport never joined the bus")
	}
	return r
}

func (r *rig) nextCore(t *testing.T, kind contracts.Kind, body any) contracts.Envelope {
	t.Helper()
	select {
	case env := <-r.inbox:
		if env.Kind != kind {
			t.Fatalf("core got %s, want %s", env.Kind, kind)
		}
		if err := env.Decode(body); err != nil {
			t.Fatal(err)
		}
		return env
	case <-time.After(waitLimit):
		t.Fatalf("core got no %s", kind)
		return contracts.Envelope{}
	}
}

func (r *rig) route(t *testing.T, kind contracts.Kind, body any) {
	t.Helper()
	env, err := contracts.NewEnvelope(kind, "", body)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.core.Route(env); err != nil {
		t.Fatalf("Route(%s) = %v", kind, err)
	}
}

func TestNewRefusesWithoutAllowedIDs(t *testing.T) {
	_, err := New(Config{Token: token, Socket: "x", Offsets: FileOffsets("x")})
	if !errors.Is(err, ErrNoAllowedIDs) || !strings.Contains(err.Error(), "@userinfobot") {
		t.Errorf("New without ids = %v, want ErrNoAllowedIDs naming @userinfobot", err)
	}
}

func TestOwnerTextReachesCoreAndStrangersAreIgnored(t *testing.T) {
	r := start(t, 0)
	r.api.push(textUpdate(1, stranger, "let me in"), textUpdate(2, owner, "hello"))
	var in contracts.Inbound
	env := r.nextCore(t, contracts.KindInbound, &in)
	if in.Text != "hello" || in.Chat != "42" || env.Sender != TransportName {
		t.Errorf("core got %+v from %q, want the owner's hello in chat 42 from %q", in, env.Sender, TransportName)
	}
	if n := r.tr.Ignored(); n != 1 {
		t.Errorf("Ignored() = %d, want 1", n)
	}
}

func TestPhotoGetsPoliteAnswer(t *testing.T) {
	r := start(t, 0)
	r.api.push(`{"update_id":3,"message":{"message_id":3,"date":1,"chat":{"id":42,"type":"private"},"from":{"id":42,"is_bot":false,"first_name":"x"},"photo":[{"file_id":"f","file_unique_id":"u","width":1,"height":1}]}}`)
	call := r.api.next(t, "sendMessage")
	if call.Form["text"] != textOnlyReply || call.Form["chat_id"] != "42" {
		t.Errorf("photo answered with %+v, want %q to chat 42", call.Form, textOnlyReply)
	}
	select {
	case env := <-r.inbox:
		t.Errorf("core got %s for a photo, want nothing", env.Kind)
	default:
	}
}

func TestOutboundIsEscapedAndSplit(t *testing.T) {
	r := start(t, 0)
	long := strings.Repeat("line of text\n", 400) // 5200 characters
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: "42", Text: "<b>bold</b> & co"})
	call := r.api.next(t, "sendMessage")
	if call.Form["text"] != "&lt;b&gt;bold&lt;/b&gt; &amp; co" || call.Form["parse_mode"] != "HTML" {
		t.Errorf("sent %+v, want the text escaped with HTML parse mode", call.Form)
	}
	r.route(t, contracts.KindOutbound, contracts.Outbound{Chat: "42", Text: long})
	first, second := r.api.next(t, "sendMessage"), r.api.next(t, "sendMessage")
	if width(first.Form["text"]) > maxMessage || first.Form["text"]+"\n"+second.Form["text"] != long {
		t.Errorf("long text sent as %d + %d characters, want two pieces under %d joining back to the text", len(first.Form["text"]), len(second.Form["text"]), maxMessage)
	}
}

func TestApprovalTapAnswersFirstThenDecidesAndRemovesButtons(t *testing.T) {
	r := start(t, 0)
	r.route(t, contracts.KindApprovalRequest, contracts.ApprovalRequest{Turn: "t7", Chat: "42", Tool: "shell", Note: "deletes", Detail: "rm <x>"})
	call := r.api.next(t, "sendMessage")
	if !strings.Contains(call.Form["reply_markup"], `"callback_data":"a:t7"`) || !strings.Contains(call.Form["reply_markup"], `"callback_data":"d:t7"`) {
		t.Errorf("approval sent with markup %s, want a:t7 and d:t7 buttons", call.Form["reply_markup"])
	}
	if !strings.Contains(call.Form["text"], "<pre>rm &lt;x&gt;</pre>") {
		t.Errorf("approval text %q, want the escaped detail in <pre>", call.Form["text"])
	}

	r.api.push(fmt.Sprintf(`{"update_id":4,"callback_query":{"id":"cb1","from":{"id":%d,"is_bot":false,"first_name":"x"},"chat_instance":"c","data":"a:t7","message":{"message_id":9,"date":1,"chat":{"id":42,"type":"private"},"text":"shelldon asks to use shell"}}}`, stranger),
		fmt.Sprintf(`{"update_id":5,"callback_query":{"id":"cb2","from":{"id":%d,"is_bot":false,"first_name":"x"},"chat_instance":"c","data":"a:t7","message":{"message_id":9,"date":1,"chat":{"id":42,"type":"private"},"text":"shelldon asks to use shell"}}}`, owner))
	var d contracts.Decision
	r.nextCore(t, contracts.KindDecision, &d)
	if !r.api.has("answerCallbackQuery") {
		t.Error("the decision reached core before the callback was answered")
	}
	if d != (contracts.Decision{Turn: "t7", Approve: true, Chat: "42"}) {
		t.Errorf("core got %+v, want approval of t7 in chat 42", d)
	}
	if answer := r.api.next(t, "answerCallbackQuery"); answer.Form["callback_query_id"] != "cb2" {
		t.Errorf("answered %+v, want only the owner's cb2", answer.Form)
	}
	edit := r.api.next(t, "editMessageText")
	if _, ok := edit.Form["reply_markup"]; ok || !strings.HasSuffix(edit.Form["text"], approvedMark) || edit.Form["message_id"] != "9" {
		t.Errorf("edit %+v, want message 9 without keyboard ending %q", edit.Form, approvedMark)
	}
	if n := r.tr.Ignored(); n != 1 {
		t.Errorf("Ignored() = %d, want 1 (the stranger's tap)", n)
	}
}

func TestOffsetsAreSavedAndResumed(t *testing.T) {
	r := start(t, 41)
	select {
	case got := <-r.api.polls:
		if got != 42 {
			t.Errorf("first getUpdates offset = %d, want 42 (saved 41 + 1)", got)
		}
	case <-time.After(waitLimit):
		t.Fatal("no getUpdates")
	}
	var in contracts.Inbound
	r.api.push(textUpdate(50, owner, "one"))
	r.nextCore(t, contracts.KindInbound, &in)
	r.api.push(textUpdate(51, owner, "two"))
	r.nextCore(t, contracts.KindInbound, &in)
	// Updates are handled in order, so update 50 was saved before 51 ran.
	if got, err := r.offsets.Load(); err != nil || got < 50 {
		t.Errorf("Load() = %d, %v, want at least 50", got, err)
	}
}

func TestFileOffsetsBadContent(t *testing.T) {
	dir := t.TempDir()
	missing := FileOffsets(filepath.Join(dir, "none"))
	if got, err := missing.Load(); got != 0 || err != nil {
		t.Errorf("Load() of a missing file = %d, %v, want 0, nil", got, err)
	}
	path := filepath.Join(dir, "bad")
	if err := FileOffsets(path).Save(7); err != nil {
		t.Fatal(err)
	}
	if got, err := FileOffsets(path).Load(); got != 7 || err != nil {
		t.Errorf("Load() after Save(7) = %d, %v, want 7, nil", got, err)
	}
	if err := writeFile(path, "not a number"); err != nil {
		t.Fatal(err)
	}
	if _, err := FileOffsets(path).Load(); err == nil {
		t.Error("Load() of garbage = nil error, want one")
	}
}

func writeFile(path, s string) error { return os.WriteFile(path, []byte(s), 0o600) }
