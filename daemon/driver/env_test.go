package driver

import (
	"strings"
	"testing"
)

func TestWorkerEnvKeepsNoSecrets(t *testing.T) {
	got := workerEnv([]string{
		"PATH=/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE", "SHELLDON_TEST_MAIN=1",
		"SHELLDON_PROVIDER_KEY=sk-secret", "CREDENTIALS_DIRECTORY=/run/credentials/shelldon.service",
		"OPENAI_API_KEY=sk-other", "SHELLDON_STATE_DIR=/var/lib/shelldon", "NOTIFY_SOCKET=/run/systemd/notify",
	})
	want := []string{"PATH=/usr/bin", "LANG=C.UTF-8", "LC_TIME=de_DE", "SHELLDON_TEST_MAIN=1", "GOMAXPROCS=1"}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("workerEnv(...) = %q, want %q", got, want)
	}
}

// TestWorkerRunsOnOneProcessorUnlessTold: a worker gets GOMAXPROCS=1 when
// core's environment sets none, and core's own when it does.
func TestWorkerRunsOnOneProcessorUnlessTold(t *testing.T) {
	for _, tc := range []struct{ environ, want []string }{
		{[]string{"PATH=/usr/bin"}, []string{"PATH=/usr/bin", "GOMAXPROCS=1"}},
		{[]string{"GOMAXPROCS=4", "PATH=/usr/bin"}, []string{"GOMAXPROCS=4", "PATH=/usr/bin"}},
	} {
		if got := workerEnv(tc.environ); strings.Join(got, " ") != strings.Join(tc.want, " ") {
			t.Errorf("workerEnv(%q) = %q, want %q", tc.environ, got, tc.want)
		}
	}
}
