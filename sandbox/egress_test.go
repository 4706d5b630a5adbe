package sandbox_test

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/cgi"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"shelldon/sandbox"
	"shelldon/sandbox/image/imagetest"
	"shelldon/testhost"
)

// The test's network: a namespace of its own, joined to the host by a
// veth pair. Every address the test names leads into it or to the host's
// own loopback, whatever the sandbox does with it, so that no packet of
// the test leaves the machine even were the egress broken.
var (
	hostSide = netip.MustParsePrefix("10.231.77.1/30")
	nsSide   = netip.MustParsePrefix("10.231.77.2/30")
	// public is an address the rules call public, the namespace's too:
	// the host routes it there for the test's length.
	public = netip.MustParseAddr("93.184.216.34")
	// linkLocal is an address of the metadata's class, unused, routed
	// into the namespace as well.
	linkLocal = netip.MustParseAddr("169.254.77.7")
)

// testNamespace makes the namespace and the veth pair, and routes public
// and linkLocal into it, all removed at the test's end; it returns the
// namespace's name.
func testNamespace(t *testing.T) string {
	t.Helper()
	ip := testhost.Tool(t, "ip", "iproute2")
	name := fmt.Sprintf("shelldon-egress-%d", os.Getpid())
	hostIf := fmt.Sprintf("sheg%d", os.Getpid()%100000)
	do := func(args ...string) {
		t.Helper()
		if out, err := exec.Command(ip, args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	do("netns", "add", name)
	t.Cleanup(func() { exec.Command(ip, "netns", "del", name).Run() })
	do("link", "add", hostIf, "type", "veth", "peer", "name", "eth0", "netns", name)
	t.Cleanup(func() { exec.Command(ip, "link", "del", hostIf).Run() })
	do("addr", "add", hostSide.String(), "dev", hostIf)
	do("link", "set", hostIf, "up")
	do("-n", name, "addr", "add", nsSide.String(), "dev", "eth0")
	do("-n", name, "addr", "add", public.String()+"/32", "dev", "eth0")
	do("-n", name, "link", "set", "eth0", "up")
	do("-n", name, "link", "set", "lo", "up")
	// Removed with the link.
	do("route", "add", public.String()+"/32", "dev", hostIf)
	do("route", "add", linkLocal.String()+"/32", "dev", hostIf)
	return name
}

// listenIn listens on addr inside the named namespace: the socket stays
// there whichever thread serves it.
func listenIn(t *testing.T, ns, addr string) net.Listener {
	t.Helper()
	type made struct {
		ln  net.Listener
		err error
	}
	done := make(chan made, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the runtime ends the thread
		f, err := os.Open("/run/netns/" + ns)
		if err != nil {
			done <- made{nil, err}
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			done <- made{nil, err}
			return
		}
		ln, err := net.Listen("tcp4", addr)
		done <- made{ln, err}
	}()
	m := <-done
	if m.err != nil {
		t.Fatalf("listen on %s in %s: %v", addr, ns, m.err)
	}
	t.Cleanup(func() { m.ln.Close() })
	return m.ln
}

// gitServer serves, on ln, the bare repository repo.git holding one
// commit of hello.txt, through git's own http-backend, and counts the
// requests it answers.
type gitServer struct {
	hits atomic.Int64
}

func serveGit(t *testing.T, ln net.Listener, greeting string) *gitServer {
	t.Helper()
	git := testhost.Tool(t, "git", "git")
	backend := "/usr/lib/git-core/git-http-backend"
	if _, err := os.Stat(backend); err != nil {
		testhost.Missing(t, backend, "apt-get install git")
	}
	root := t.TempDir()
	work := filepath.Join(root, "work")
	for _, args := range [][]string{
		{"init", "-q", "-b", "main", work},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "start"},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v: %s", args, err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(work, "hello.txt"), []byte(greeting+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"-C", work, "add", "hello.txt"},
		{"-C", work, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hello"},
		{"clone", "-q", "--bare", work, filepath.Join(root, "repo.git")},
	} {
		if out, err := exec.Command(git, args...).CombinedOutput(); err != nil {
			t.Fatalf("git %q: %v: %s", args, err, out)
		}
	}
	s := &gitServer{}
	handler := &cgi.Handler{Path: backend, Env: []string{"GIT_PROJECT_ROOT=" + root, "GIT_HTTP_EXPORT_ALL=1"}}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.hits.Add(1)
		handler.ServeHTTP(w, r)
	})}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return s
}

// syncBuffer is a log's output, read while runs may still write it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestEgressFollowsHTTPGetsRules: a networked run, a real git in the
// container against real git servers, reaches a public address and
// nothing else: not the host's loopback, not a private network, not the
// cloud's metadata, and not anything at all without core's proxy.
func TestEgressFollowsHTTPGetsRules(t *testing.T) {
	img := imagetest.Image(t)
	ns := testNamespace(t)
	lanLn := listenIn(t, ns, "0.0.0.0:0")
	lan := serveGit(t, lanLn, "hello from the public remote")
	lanPort := lanLn.Addr().(*net.TCPAddr).Port
	hostLn, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { hostLn.Close() })
	host := serveGit(t, hostLn, "hello from the host's loopback")
	hostPort := hostLn.Addr().(*net.TCPAddr).Port

	var logs syncBuffer
	sb, err := sandbox.New(sandbox.Config{Image: img.Root, RunDir: t.TempDir(), Log: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	publicURL := fmt.Sprintf("http://%s:%d/repo.git", public, lanPort)
	private := fmt.Sprintf("http://%s:%d/repo.git", nsSide.Addr(), lanPort)
	loopback := fmt.Sprintf("http://127.0.0.1:%d/repo.git", hostPort)

	for _, o := range owners {
		t.Run(o.Name, func(t *testing.T) {
			ws := workspace(t, o.UID, nil)
			netRun := func(script string) sandbox.Result {
				t.Helper()
				res, err := sb.Run(context.Background(), sandbox.Spec{View: sandbox.Captured, Workspace: ws, Network: true,
					Argv: sh(script), Limits: sandbox.Limits{Wall: 30 * time.Second}})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { res.Changes.Discard() })
				return res
			}

			t.Run("a public address is reached", func(t *testing.T) {
				before := lan.hits.Load()
				res := netRun("git clone -q " + publicURL + " clone && cat clone/hello.txt")
				if res.ExitCode != 0 || !strings.Contains(res.Text(), "hello from the public remote") {
					t.Fatalf("git clone of a public remote = %d: %s", res.ExitCode, res.Text())
				}
				if lan.hits.Load() == before {
					t.Error("the server answered nothing")
				}
				if res.Changes == nil || len(res.Changes.Changes) == 0 {
					t.Error("the clone left no changes to apply")
				}
			})

			for _, tc := range []struct{ name, url, why string }{
				{"the host's loopback", loopback, "loopback"},
				{"a private network", private, "private"},
				{"the cloud's metadata", fmt.Sprintf("http://%s/latest/meta-data/", linkLocal), "link-local"},
				{"the metadata by a mapped address", fmt.Sprintf("http://[::ffff:%s]/", linkLocal), "link-local"},
				{"the unspecified address", fmt.Sprintf("http://0.0.0.0:%d/repo.git", hostPort), "unspecified"},
			} {
				t.Run(tc.name+" is refused", func(t *testing.T) {
					lanBefore, hostBefore := lan.hits.Load(), host.hits.Load()
					res := netRun("git ls-remote " + tc.url + "; echo exit $?")
					if !strings.Contains(res.Text(), "exit 128") {
						t.Errorf("git ls-remote %s: %s; want it failed", tc.url, res.Text())
					}
					if lan.hits.Load() != lanBefore || host.hits.Load() != hostBefore {
						t.Errorf("git ls-remote %s reached a server: %s", tc.url, res.Text())
					}
					if !strings.Contains(logs.String(), tc.why) {
						t.Errorf("no refusal naming %q in the log:\n%s", tc.why, logs.String())
					}
				})
			}

			t.Run("nothing is reached around the proxy", func(t *testing.T) {
				lanBefore, hostBefore := lan.hits.Load(), host.hits.Load()
				probe := func(addr string, port int) string {
					return fmt.Sprintf("python3 -c \"import socket; socket.create_connection(('%s', %d), timeout=3); print('REACHED %s')\"; ", addr, port, addr)
				}
				res := netRun(probe("127.0.0.1", hostPort) + probe(nsSide.Addr().String(), lanPort) + probe(hostSide.Addr().String(), lanPort) +
					"env -u ALL_PROXY -u all_proxy git ls-remote " + publicURL + "; echo exit $?")
				if strings.Contains(res.Text(), "REACHED") || !strings.Contains(res.Text(), "exit 128") {
					t.Errorf("a connection around the proxy: %s", res.Text())
				}
				if lan.hits.Load() != lanBefore || host.hits.Load() != hostBefore {
					t.Errorf("a server was reached around the proxy: %s", res.Text())
				}
			})

			t.Run("without network there is no proxy", func(t *testing.T) {
				res, err := sb.Run(context.Background(), sandbox.Spec{Workspace: ws, Argv: sh("echo proxy=$ALL_PROXY; git ls-remote " + publicURL + "; echo exit $?")})
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(res.Text(), "proxy=\n") || !strings.Contains(res.Text(), "exit 128") {
					t.Errorf("a run without network: %s", res.Text())
				}
			})
		})
	}
}
