package journal

import (
	"context"
	"encoding"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	sdjournal "github.com/coreos/go-systemd/v22/journal"

	"shelldon/clock"
)

// FieldPrefix starts the journal field of every attribute, so shelldon's
// fields never clash with journald's own and always start with a letter,
// which journald demands of a field a client sends.
const FieldPrefix = "SHELLDON_"

// maxFieldName is journald's limit on a field name; longer names are
// dropped by journald, so they are cut here instead.
const maxFieldName = 64

// sendTimeout bounds how long a record may hold up its caller while
// journald does not take it; journald normally takes one in microseconds.
const sendTimeout = 500 * time.Millisecond

// maxHungSends is how many sends may hang on journald at once before
// records skip it.
const maxHungSends = 16

// Options configure a [Handler].
type Options struct {
	// Actor names the process in SYSLOG_IDENTIFIER as "shelldon-<Actor>":
	// core, broker, worker, panel. Empty gives plain "shelldon".
	Actor string
	// Level is the minimum level logged; nil means slog.LevelInfo.
	Level slog.Leveler
	// AddSource adds CODE_FILE, CODE_LINE and CODE_FUNC.
	AddSource bool
	// Fallback takes the records journald does not (and, with Tee, every
	// record). Nil means text on stderr at Level, with AddSource.
	Fallback slog.Handler
	// Tee writes every record to Fallback as well as to the journal: set
	// it when a person watches stderr, such as a terminal. [New] ignores
	// it when stderr already is the journal stream (a unit's stderr),
	// where teeing would put every line in the journal twice.
	Tee bool
}

func (o Options) fallback() slog.Handler {
	if o.Fallback != nil {
		return o.Fallback
	}
	return slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: o.Level, AddSource: o.AddSource})
}

// New returns a journal [Handler] when journald's socket takes
// datagrams, and opts' fallback handler otherwise.
func New(opts Options) slog.Handler {
	if !sdjournal.Enabled() {
		return opts.fallback()
	}
	if opts.Tee {
		if stream, err := sdjournal.StderrIsJournalStream(); err == nil && stream {
			opts.Tee = false
		}
	}
	return NewHandler(opts)
}

// Handler sends each record to journald as one entry. It is immutable:
// WithAttrs and WithGroup return new handlers that share only the sender
// and its failure count.
type Handler struct {
	identifier string
	level      slog.Leveler
	addSource  bool
	tee        bool
	// fallback has the same attributes and groups as this handler.
	fallback slog.Handler
	// fields are the WithAttrs attributes, already named and formatted.
	fields [][2]string
	// groups are the open WithGroup names, outermost first.
	groups []string
	sender *sender
}

// NewHandler returns a handler that sends to journald whether or not it
// listens; [New] is the one that chooses.
func NewHandler(opts Options) *Handler {
	identifier := "shelldon"
	if opts.Actor != "" {
		identifier += "-" + opts.Actor
	}
	level := opts.Level
	if level == nil {
		level = slog.LevelInfo
	}
	fallback := opts.fallback()
	return &Handler{
		identifier: identifier,
		level:      level,
		addSource:  opts.AddSource,
		tee:        opts.Tee,
		fallback:   fallback,
		sender: &sender{
			send:     sdjournal.Send,
			clock:    clock.Real{},
			maxHung:  maxHungSends,
			fallback: fallback,
		},
	}
}

// SendFailures counts the records journald did not take, over this
// handler and every handler derived from it.
func (h *Handler) SendFailures() uint64 { return h.sender.failures.Load() }

// Enabled implements [slog.Handler].
func (h *Handler) Enabled(_ context.Context, level slog.Level) bool {
	return level >= h.level.Level()
}

// WithAttrs implements [slog.Handler].
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	derived := *h
	derived.fields = slices.Clone(h.fields)
	for _, a := range attrs {
		derived.fields = appendAttr(derived.fields, h.groups, a)
	}
	derived.fallback = h.fallback.WithAttrs(attrs)
	return &derived
}

// WithGroup implements [slog.Handler].
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	derived := *h
	derived.groups = append(slices.Clip(h.groups), name)
	derived.fallback = h.fallback.WithGroup(name)
	return &derived
}

// Handle implements [slog.Handler]. It returns an error only when the
// fallback fails to take a record it is given.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	sendErr := h.sender.deliver(r.Message, priority(r.Level), h.entryFields(r))
	if h.tee || sendErr != nil {
		if sendErr != nil {
			h.sender.noteFailure(ctx, sendErr)
		}
		if h.fallback.Enabled(ctx, r.Level) {
			if err := h.fallback.Handle(ctx, r); err != nil {
				return fmt.Errorf("journal fallback: %w", err)
			}
		}
	}
	return nil
}

// entryFields are the journal fields of r other than MESSAGE and PRIORITY,
// which journal.Send adds itself. Later fields win over earlier ones of the
// same name, as an attribute does over SHELLDON_TIME.
func (h *Handler) entryFields(r slog.Record) map[string]string {
	fields := make(map[string]string, 4+len(h.fields)+r.NumAttrs())
	fields["SYSLOG_IDENTIFIER"] = h.identifier
	if !r.Time.IsZero() {
		fields[FieldName(slog.TimeKey)] = r.Time.Format(time.RFC3339Nano)
	}
	if h.addSource && r.PC != 0 {
		frame, _ := runtime.CallersFrames([]uintptr{r.PC}).Next()
		fields["CODE_FILE"] = frame.File
		fields["CODE_LINE"] = strconv.Itoa(frame.Line)
		fields["CODE_FUNC"] = frame.Function
	}
	for _, f := range h.fields {
		fields[f[0]] = f[1]
	}
	var recordFields [][2]string
	r.Attrs(func(a slog.Attr) bool {
		recordFields = appendAttr(recordFields, h.groups, a)
		return true
	})
	for _, f := range recordFields {
		fields[f[0]] = f[1]
	}
	return fields
}

// appendAttr appends the fields of a (one, or one per member of a group)
// under the open groups, skipping what slog says a handler must ignore:
// an empty key outside a group, and a group with no members.
func appendAttr(fields [][2]string, groups []string, a slog.Attr) [][2]string {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindGroup {
		members := a.Value.Group()
		if len(members) == 0 {
			return fields
		}
		if a.Key != "" {
			groups = append(slices.Clip(groups), a.Key)
		}
		for _, m := range members {
			fields = appendAttr(fields, groups, m)
		}
		return fields
	}
	if a.Key == "" {
		return fields
	}
	path := append(slices.Clip(groups), a.Key)
	return append(fields, [2]string{FieldName(path...), formatValue(a.Value)})
}

// FieldName is the journal field for an attribute key inside groups
// (outermost first): the parts joined with '_', upper-cased, every character
// outside [A-Z0-9_] turned into '_', behind [FieldPrefix], and cut to
// journald's 64 characters. FieldName("turn") is "SHELLDON_TURN";
// FieldName("http", "status") is "SHELLDON_HTTP_STATUS".
func FieldName(path ...string) string {
	var b strings.Builder
	b.WriteString(FieldPrefix)
	for i, part := range path {
		if i > 0 {
			b.WriteByte('_')
		}
		for _, c := range part {
			switch {
			case 'a' <= c && c <= 'z':
				b.WriteRune(c - 'a' + 'A')
			case 'A' <= c && c <= 'Z', '0' <= c && c <= '9', c == '_':
				b.WriteRune(c)
			default:
				b.WriteByte('_')
			}
		}
	}
	name := b.String()
	if len(name) > maxFieldName {
		name = name[:maxFieldName]
	}
	return name
}

// formatValue writes v as slog's text handler would, but unquoted: the
// journal carries any bytes, newlines included. A value whose formatting
// panics (a nil pointer's Error method) is logged as the panic.
func formatValue(v slog.Value) (text string) {
	defer func() {
		if p := recover(); p != nil {
			text = fmt.Sprintf("!PANIC: %v", p)
		}
	}()
	switch v.Kind() {
	case slog.KindTime:
		return v.Time().Format(time.RFC3339Nano)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return x.Error()
		case encoding.TextMarshaler:
			data, err := x.MarshalText()
			if err != nil {
				return "!ERROR: " + err.Error()
			}
			return string(data)
		case []byte:
			return string(x)
		}
		return fmt.Sprintf("%+v", v.Any())
	default:
		return v.String()
	}
}

// priority maps a slog level to syslog's: levels between slog's named ones
// take the priority of the named level below them.
func priority(level slog.Level) sdjournal.Priority {
	switch {
	case level < slog.LevelInfo:
		return sdjournal.PriDebug
	case level < slog.LevelWarn:
		return sdjournal.PriInfo
	case level < slog.LevelError:
		return sdjournal.PriWarning
	default:
		return sdjournal.PriErr
	}
}

// errJournalBusy means earlier sends still hang on journald, so this record
// was not tried.
var errJournalBusy = errors.New("journald has not taken earlier records")

// sender hands entries to journald within sendTimeout, and keeps the
// failure count every handler derived from one [NewHandler] shares.
type sender struct {
	send  func(message string, priority sdjournal.Priority, fields map[string]string) error
	clock clock.Clock
	// hung counts the sends that outlived sendTimeout and still wait on
	// journald; at maxHung records go straight to the fallback, so a hung
	// journald cannot pile up goroutines.
	hung     atomic.Int64
	maxHung  int64
	fallback slog.Handler
	failures atomic.Uint64
	told     atomic.Bool
}

func (s *sender) deliver(message string, pri sdjournal.Priority, fields map[string]string) error {
	if s.hung.Load() >= s.maxHung {
		return errJournalBusy
	}
	done := make(chan error, 1)
	expired := make(chan struct{})
	timer := s.clock.AfterFunc(sendTimeout, func() { close(expired) })
	go func() { done <- s.send(message, pri, fields) }()
	select {
	case err := <-done:
		timer.Stop()
		if err != nil {
			return fmt.Errorf("send to journald: %w", err)
		}
		return nil
	case <-expired:
		s.hung.Add(1)
		go func() {
			<-done
			s.hung.Add(-1)
		}()
		return fmt.Errorf("send to journald: not taken within %v", sendTimeout)
	}
}

// noteFailure counts a failed send and, the first time only, says on the
// fallback why records are turning up there.
func (s *sender) noteFailure(ctx context.Context, err error) {
	s.failures.Add(1)
	if s.told.Swap(true) || !s.fallback.Enabled(ctx, slog.LevelWarn) {
		return
	}
	r := slog.NewRecord(time.Now(), slog.LevelWarn, "journald did not take a record; records it does not take are written here instead", 0)
	r.AddAttrs(slog.String("err", err.Error()))
	_ = s.fallback.Handle(ctx, r)
}

// NewLogger is the logger of one actor's process: to the journal, under
// SYSLOG_IDENTIFIER shelldon-<actor>, where journald listens, and as text
// to w at slog.LevelInfo elsewhere.
func NewLogger(actor string, w io.Writer) *slog.Logger {
	return slog.New(New(Options{
		Actor:    actor,
		Level:    slog.LevelInfo,
		Fallback: slog.NewTextHandler(w, &slog.HandlerOptions{Level: slog.LevelInfo}),
	}))
}

// lingerForJournald is how long a process that is about to exit waits for
// journald to take its last entries; see [Linger].
const lingerForJournald = 50 * time.Millisecond

// Linger waits a moment, when this process logs to journald, before the
// caller exits. journald learns which unit an entry came from by reading
// the sender's /proc entry when it takes the datagram; an entry still
// queued when its process has exited and been reaped carries no
// _SYSTEMD_UNIT, so `systemctl status` and `journalctl -u` leave it out.
// A turn's worker writes its summary last, right before it exits (seen in
// CI: the summary of a turn missing from its unit's journal). The wait
// comes after the worker's result has gone to core, so no reply waits on
// it.
func Linger() {
	if sdjournal.Enabled() {
		time.Sleep(lingerForJournald)
	}
}
