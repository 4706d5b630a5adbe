package telegramtest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	// firstUpdateID is the id of the first queued update.
	firstUpdateID = 1000
	// defaultBotID is the bot's user id when the token does not start with one.
	defaultBotID int64 = 7000000000
	botUsername        = "shelldon_test_bot"
	// waitLimit bounds WaitCall and WaitMessage.
	waitLimit = 15 * time.Second
)

// errDropped makes the server close the connection without answering.
var errDropped = errors.New("connection dropped without an answer")

// Server is a fake Telegram Bot API server on loopback. It is safe for
// concurrent use.
type Server struct {
	token       string
	bot         user
	http        *httptest.Server
	waitTimeout time.Duration

	mu sync.Mutex
	// changed is closed and replaced whenever anything changes, waking
	// long polls and waiters.
	changed    chan struct{}
	closed     bool
	down       bool
	limited    int
	retryAfter int
	faults     map[faultKey]Fault
	// noReactions makes setMessageReaction refuse every reaction.
	noReactions bool
	calls       []*Call

	nextUpdate int64
	pending    []queuedUpdate
	delivered  map[int64]int
	confirmed  int64
	// pollGeneration counts getUpdates calls; a newer one ends an older one
	// still waiting, as Telegram does.
	pollGeneration int
	// polling counts getUpdates calls waiting for an update.
	polling int

	chats     map[int64]*chat
	queries   map[string]bool // issued callback query id → answered
	nextQuery int64
	nextFile  int
	commands  []BotCommand

	// files are those the owner sent, by file id, for getFile and the
	// downloads; downloadFault, when set, is the status every download gets.
	files         map[string]*storedFile
	downloads     []string
	downloadFault int

	// connections counts the TCP connections accepted.
	connections int
	// latency holds back every answer, as a network's round trip does.
	latency time.Duration
}

// Call is one request the server received.
type Call struct {
	Seq    int    // order in which calls arrived, from 1, over all methods incl. getUpdates
	Method string // as Telegram names it ("sendMessage"), or as requested when unknown
	// Params are the form or JSON fields as strings (objects as their JSON
	// text); a file part appears under its field name with the file's content.
	Params map[string]string
	// Status is the HTTP status answered; 0 while a long poll is still
	// waiting, or when the connection was closed without an answer (server
	// down, or the client gave up on a long poll).
	Status int
	Error  string // description of an error answer, "" on success
	At     time.Time
	// Answered is when the answer was written (zero for a call dropped or
	// still waiting): a client killed between At and a moment after it
	// may have had its call carried out without learning so.
	Answered time.Time
	// answered tells a long poll still waiting from a dropped call.
	answered bool
}

// BotCommand is one command set by setMyCommands.
type BotCommand struct{ Command, Description string }

// New starts a server on loopback answering for token; t.Cleanup closes it.
func New(t testing.TB, token string) *Server {
	t.Helper()
	return NewOn(t, token, nil)
}

// SetWaitLimit changes how long WaitCall and WaitMessage wait (15 s by
// default): a pet in an emulated VM answers more slowly.
func (s *Server) SetWaitLimit(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.waitTimeout = d
}

// NewOn is New serving on ln, for a server that must be reached inside
// another network (a booted test host's); nil means a fresh loopback
// listener.
func NewOn(t testing.TB, token string, ln net.Listener) *Server {
	t.Helper()
	if strings.TrimSpace(token) == "" {
		t.Fatalf("telegramtest.New: empty token")
	}
	botID := int64(defaultBotID)
	if prefix, _, found := strings.Cut(token, ":"); found {
		if id, err := strconv.ParseInt(prefix, 10, 64); err == nil && id > 0 {
			botID = id
		}
	}
	s := &Server{
		token:       token,
		bot:         user{ID: botID, IsBot: true, FirstName: "Shelldon Test", Username: botUsername},
		waitTimeout: waitLimit,
		changed:     make(chan struct{}),
		nextUpdate:  firstUpdateID,
		delivered:   map[int64]int{},
		chats:       map[int64]*chat{},
		queries:     map[string]bool{},
		faults:      map[faultKey]Fault{},
	}
	s.http = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	s.http.Config.ConnState = s.connState
	if ln != nil {
		s.http.Listener.Close()
		s.http.Listener = ln
	}
	s.http.Start()
	t.Cleanup(s.close)
	return s
}

// URL is the base URL to give bot.WithServerURL.
func (s *Server) URL() string { return s.http.URL }

// Connections counts the TCP connections the server has accepted. A
// client that keeps its connections alive opens few; against Telegram
// each new one costs a TLS handshake, so a test can hold the code under
// test to reusing them.
func (s *Server) Connections() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.connections
}

// SetLatency holds back every answer by d from now on, as the round trip
// to Telegram holds it back: a client's calls then overlap as they do
// against Telegram, where on loopback each would be done before the next
// began.
func (s *Server) SetLatency(d time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latency = d
}

func (s *Server) connState(_ net.Conn, state http.ConnState) {
	if state == http.StateNew {
		s.mu.Lock()
		s.connections++
		s.mu.Unlock()
	}
}

// close ends waiting long polls, then the server; httptest's Close would
// otherwise wait for them.
func (s *Server) close() {
	s.mu.Lock()
	s.closed = true
	s.notify()
	s.mu.Unlock()
	s.http.Close()
}

// notify wakes everyone waiting for a change. Callers hold s.mu.
func (s *Server) notify() {
	close(s.changed)
	s.changed = make(chan struct{})
}

// method is one Bot API method the server implements.
type method struct {
	name   string
	handle func(s *Server, ctx context.Context, req request) (any, error)
}

// methods are keyed by lower-case name: Telegram's method names are case
// insensitive.
var methods = map[string]method{}

func init() {
	for _, m := range []method{
		{"getMe", (*Server).getMe},
		{"getUpdates", (*Server).getUpdates},
		{"deleteWebhook", (*Server).deleteWebhook},
		{"sendMessage", (*Server).sendMessage},
		{"editMessageText", (*Server).editMessageText},
		{"editMessageReplyMarkup", (*Server).editMessageReplyMarkup},
		{"answerCallbackQuery", (*Server).answerCallbackQuery},
		{"sendChatAction", (*Server).sendChatAction},
		{"sendDocument", (*Server).sendDocument},
		{"setMyCommands", (*Server).setMyCommands},
		{"getFile", (*Server).getFile},
		{"deleteMessage", (*Server).deleteMessage},
		{"setMessageReaction", (*Server).setMessageReaction},
		{"sendMessageDraft", (*Server).sendMessageDraft},
	} {
		methods[strings.ToLower(m.name)] = m
	}
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	if strings.HasPrefix(r.URL.Path, "/file/bot") {
		s.serveFile(w, r)
		return
	}
	token, name, validPath := strings.Cut(strings.TrimPrefix(r.URL.Path, "/bot"), "/")
	validPath = validPath && strings.HasPrefix(r.URL.Path, "/bot") && name != "" && !strings.Contains(name, "/")
	m, known := methods[strings.ToLower(name)]
	if known {
		name = m.name
	}

	s.mu.Lock()
	down := s.down
	s.mu.Unlock()
	if down {
		s.finish(s.arrive(name, nil), 0, "")
		drop(w)
		return
	}

	req, readErr := readRequest(w, r)
	call := s.arrive(name, req.params)
	var result any
	var err error
	switch {
	case !validPath:
		err = &apiError{code: http.StatusNotFound, description: "Not Found"}
	case token != s.token:
		err = &apiError{code: http.StatusUnauthorized, description: "Unauthorized"}
	case !known:
		err = &apiError{code: http.StatusNotFound, description: "Not Found"}
	case readErr != nil:
		err = badRequest("can't parse request: %v", readErr)
	default:
		if err = s.fault(name, req); err == nil {
			err = s.takeRateLimit(name)
		}
		if err == nil {
			result, err = m.handle(s, r.Context(), req)
		}
	}
	if errors.Is(err, errDropped) {
		s.finish(call, 0, "")
		drop(w)
		return
	}
	answer := response{OK: true, Result: result}
	status := http.StatusOK
	if err != nil {
		var apiErr *apiError
		if !errors.As(err, &apiErr) {
			apiErr = &apiError{code: http.StatusInternalServerError, description: "Internal Server Error: " + err.Error()}
		}
		status = apiErr.code
		answer = response{ErrorCode: apiErr.code, Description: apiErr.description}
		if apiErr.retryAfter > 0 {
			answer.Parameters = &responseParameters{RetryAfter: apiErr.retryAfter}
		}
	}
	s.mu.Lock()
	latency := s.latency
	s.mu.Unlock()
	select {
	case <-time.After(latency):
	case <-r.Context().Done():
	}
	s.finish(call, status, answer.Description)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(answer) // a client that went away is no concern of the fake
}

// drop closes the connection without an answer, as a network outage would.
func drop(w http.ResponseWriter) {
	hijacker, ok := w.(http.Hijacker)
	if !ok {
		panic(http.ErrAbortHandler)
	}
	conn, _, err := hijacker.Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	_ = conn.Close() // closing is the whole point; its error changes nothing
}

// arrive records a call as it arrives.
func (s *Server) arrive(name string, params map[string]string) *Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	call := &Call{Seq: len(s.calls) + 1, Method: name, Params: params, At: time.Now()}
	s.calls = append(s.calls, call)
	s.notify()
	return call
}

// finish records how a call was answered.
func (s *Server) finish(call *Call, status int, description string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	call.Status, call.Error, call.answered = status, description, true
	if status != 0 {
		call.Answered = time.Now()
	}
	s.notify()
}

// takeRateLimit answers 429 while a RateLimit lasts; getUpdates is exempt.
func (s *Server) takeRateLimit(name string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.limited == 0 || name == "getUpdates" {
		return nil
	}
	s.limited--
	return &apiError{
		code:        http.StatusTooManyRequests,
		description: fmt.Sprintf("Too Many Requests: retry after %d", s.retryAfter),
		retryAfter:  s.retryAfter,
	}
}

// Fault makes calls of one method fail, as a Bot API server in trouble
// (500), one without the method (404), or one in trouble with a single
// chat does.
type Fault struct {
	Method string // as Telegram names it: "sendMessage"
	// Chat, when not 0, limits the fault to the calls whose chat_id is Chat.
	Chat int64
	// Status is the HTTP status and error_code answered.
	Status int
	// Description is the answer's description; "" means the status's text.
	Description string
	// RetryAfter is the answer's parameters.retry_after, for a 429.
	RetryAfter int
}

type faultKey struct {
	method string // lower case, as Telegram's method names are case insensitive
	chat   int64
}

// Fail makes every call that f matches answer with f's error from now on,
// until Heal; it replaces an earlier fault of the same method and chat. A
// chat's fault is tried before the method's.
func (s *Server) Fail(f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f.Description == "" {
		f.Description = http.StatusText(f.Status)
	}
	s.faults[faultKey{strings.ToLower(f.Method), f.Chat}] = f
	s.notify()
}

// Heal lifts the fault Fail set for method and chat.
func (s *Server) Heal(method string, chat int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.faults, faultKey{strings.ToLower(method), chat})
	s.notify()
}

// fault is the error a Fault gives the call, or nil.
func (s *Server) fault(name string, req request) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	method := strings.ToLower(name)
	keys := []faultKey{{method, 0}}
	if chat, err := req.int("chat_id", 0); err == nil && chat != 0 {
		keys = []faultKey{{method, chat}, {method, 0}}
	}
	for _, k := range keys {
		if f, ok := s.faults[k]; ok {
			return &apiError{code: f.Status, description: f.Description, retryAfter: f.RetryAfter}
		}
	}
	return nil
}

// RateLimit makes the next n calls of any method except getUpdates answer
// 429 Too Many Requests with parameters.retry_after set to retryAfter.
func (s *Server) RateLimit(n, retryAfter int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.limited, s.retryAfter = max(n, 0), retryAfter
}

// SetDown takes the server down or back up. While it is down every request,
// including a long poll already waiting, has its connection closed without
// an answer.
func (s *Server) SetDown(down bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = down
	s.notify()
}

// Calls returns every call of method ("" for all), in arrival order.
func (s *Server) Calls(method string) []Call {
	s.mu.Lock()
	defer s.mu.Unlock()
	var calls []Call
	for _, c := range s.calls {
		if method == "" || c.Method == method {
			copied := *c
			copied.Params = maps.Clone(c.Params)
			calls = append(calls, copied)
		}
	}
	return calls
}

// await waits until ready reports true or the wait limit passes. ready
// runs without s.mu held, so it may use the exported methods.
func (s *Server) await(ready func() bool) bool {
	s.mu.Lock()
	limit := s.waitTimeout
	s.mu.Unlock()
	timer := time.NewTimer(limit)
	defer timer.Stop()
	for {
		s.mu.Lock()
		changed := s.changed // taken before checking, so no change is missed
		s.mu.Unlock()
		if ready() {
			return true
		}
		select {
		case <-changed:
		case <-timer.C:
			return false
		}
	}
}

// WaitCall returns the first successful (status 200) call of method ("" for
// any) that match accepts (nil accepts all), waiting up to 15 s for it to
// arrive; then it fails t, listing the calls seen.
func (s *Server) WaitCall(t testing.TB, method string, match func(Call) bool) Call {
	t.Helper()
	var found Call
	if s.await(func() bool {
		for _, c := range s.Calls(method) {
			if c.Status == http.StatusOK && (match == nil || match(c)) {
				found = c
				return true
			}
		}
		return false
	}) {
		return found
	}
	t.Fatalf("telegramtest: no successful %q call matched within %v; calls seen:\n%s", method, s.waitTimeout, describeCalls(s.Calls("")))
	return Call{}
}

// maxShownParam bounds each parameter shown when a wait fails; a document
// can be large.
const maxShownParam = 200

func describeCalls(calls []Call) string {
	if len(calls) == 0 {
		return "\t(none)"
	}
	var b strings.Builder
	for _, c := range calls {
		fmt.Fprintf(&b, "\t#%d %s status=%d", c.Seq, c.Method, c.Status)
		switch {
		case !c.answered:
			b.WriteString(" (waiting)")
		case c.Status == 0:
			b.WriteString(" (dropped)")
		}
		if c.Error != "" {
			fmt.Fprintf(&b, " error=%q", c.Error)
		}
		params := make(map[string]string, len(c.Params))
		for name, value := range c.Params {
			if len(value) > maxShownParam {
				value = value[:maxShownParam] + "…"
			}
			params[name] = value
		}
		fmt.Fprintf(&b, " params=%q\n", params)
	}
	return b.String()
}
