package chat

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"

	"shelldon/bus"
	"shelldon/contracts"
	"shelldon/daemon/visible"
)

// TransportName is the name the terminal joins the bus with.
const TransportName = "cli"

// maxLine is the longest line the owner may type.
const maxLine = 64 << 10

// pageLines is how much of a request's detail the terminal shows at a
// time; /more shows the next page.
const pageLines = 40

// MoreCommand shows the next page of the request's detail.
const MoreCommand = "/more"

// Options configure a terminal chat.
type Options struct {
	Socket   string
	MaxFrame int
	In       io.Reader
	Out      io.Writer
	// Banner is printed once before the first prompt (the demo-model
	// notice, for instance).
	Banner string
	// Logf reports bus trouble; nil discards it.
	Logf func(format string, args ...any)
}

// Run chats until the input ends or ctx is done.
func Run(ctx context.Context, opts Options) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(opts.Out, format, args...)
	}
	transport := &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello: contracts.Hello{Role: contracts.RoleTransport, Name: TransportName},
	}
	panel := &bus.Client{
		Socket: opts.Socket, MaxFrame: opts.MaxFrame, Logf: opts.Logf,
		Hello: contracts.Hello{Role: contracts.RolePanel, Name: TransportName},
	}
	errs := make(chan error, 2)
	// asking is the parked turn whose approval the next line answers, and
	// what is left to show of its detail.
	var asking struct {
		sync.Mutex
		turn string
		rest []string
	}
	// showPage prints the next page of the request's detail; the caller
	// holds asking's lock.
	showPage := func() {
		page := asking.rest[:min(pageLines, len(asking.rest))]
		asking.rest = asking.rest[len(page):]
		text := strings.Join(page, "\n")
		if n := len(asking.rest); n > 0 {
			text += fmt.Sprintf("\n[… %d more line(s): type %s to see them]", n, MoreCommand)
		}
		printf("   %s\n   approve? [y/N] ", indent(text))
	}
	go func() {
		errs <- transport.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
			switch env.Kind {
			case contracts.KindOutbound:
				var out contracts.Outbound
				if env.Decode(&out) == nil {
					printf("\nshelldon: %s\n> ", indent(visible.Text(out.Text)))
				}
			case contracts.KindApprovalRequest:
				var req contracts.ApprovalRequest
				if env.Decode(&req) != nil {
					return
				}
				// Core rendered the detail to be seen as it is; it is made
				// visible again here all the same, so that nothing that
				// reaches this terminal can move its cursor.
				asking.Lock()
				asking.turn = req.Turn
				asking.rest = strings.Split(visible.Text(req.Detail), "\n")
				printf("\n── shelldon asks to use %s: %s\n", visible.Line(req.Tool), visible.Line(req.Note))
				showPage()
				asking.Unlock()
			}
		})
	}()
	go func() {
		errs <- panel.Run(ctx, func(_ *bus.Conn, env contracts.Envelope) {
			var s contracts.Snapshot
			if env.Kind != contracts.KindSnapshot || env.Decode(&s) != nil {
				return
			}
			// The thinking face shows on every turn; the terminal needs
			// only the faces that say something.
			if s.Face != "thinking" {
				printf("\n          %s  %s\n> ", visible.Line(s.Glyphs), visible.Line(s.Caption))
			}
		})
	}()

	if opts.Banner != "" {
		printf("%s\n", opts.Banner)
	}
	printf("Type a message and press Enter; Ctrl-D quits.\n> ")
	lines := make(chan string)
	var readErr error // set before lines is closed
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(opts.In)
		sc.Buffer(make([]byte, maxLine), maxLine)
		for sc.Scan() {
			select {
			case lines <- sc.Text():
			case <-ctx.Done():
				return
			}
		}
		readErr = sc.Err()
	}()
	for {
		select {
		case <-ctx.Done():
			return nil
		case err := <-errs:
			if err != nil {
				return fmt.Errorf("chat: %w", err)
			}
		case line, ok := <-lines:
			if !ok {
				if errors.Is(readErr, bufio.ErrTooLong) {
					return fmt.Errorf("chat: a line is longer than %d bytes: %w", maxLine, readErr)
				}
				if readErr != nil {
					return fmt.Errorf("chat: read input: %w", readErr)
				}
				printf("\nbye\n")
				return nil
			}
			text := strings.TrimSpace(line)
			asking.Lock()
			if asking.turn != "" && text == MoreCommand {
				if len(asking.rest) == 0 {
					printf("   (that was all of it)\n   approve? [y/N] ")
				} else {
					showPage()
				}
				asking.Unlock()
				continue
			}
			turn := asking.turn
			asking.turn, asking.rest = "", nil
			asking.Unlock()
			var env contracts.Envelope
			var err error
			switch {
			case turn != "":
				// The line answers the question; anything but yes is no.
				yes := strings.EqualFold(text, "y") || strings.EqualFold(text, "yes")
				env, err = contracts.NewEnvelope(contracts.KindDecision, "", contracts.Decision{Turn: turn, Approve: yes, Chat: TransportName})
			case text == "":
				printf("> ")
				continue
			default:
				env, err = contracts.NewEnvelope(contracts.KindInbound, "", contracts.Inbound{Chat: TransportName, Text: text})
			}
			if err == nil {
				err = transport.Send(env)
			}
			if errors.Is(err, bus.ErrNotConnected) {
				printf("(core is not reachable yet; message not sent — try again in a moment)\n> ")
			} else if err != nil {
				printf("(could not send: %v)\n> ", err)
			}
		}
	}
}

// indent lines up a message's later lines under its first.
func indent(s string) string { return strings.ReplaceAll(s, "\n", "\n          ") }
