package vm

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOptionsCheck(t *testing.T) {
	dir := t.TempDir()
	deb := filepath.Join(dir, "shelldon_1_amd64.deb")
	if err := os.WriteFile(deb, []byte("!<arch>\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name    string
		opts    Options
		wantErr string
	}{
		{"zero value", Options{}, ""},
		{"everything", Options{MemoryMB: 1024, Debs: []string{deb}, Forward: map[int]int{8080: 41234, 443: 1}}, ""},
		{"too little memory", Options{MemoryMB: 64}, "MemoryMB 64"},
		{"negative memory", Options{MemoryMB: -1}, "MemoryMB -1"},
		{"guest port zero", Options{Forward: map[int]int{0: 80}}, "Forward 0 → 80"},
		{"host port too big", Options{Forward: map[int]int{80: 70000}}, "Forward 80 → 70000"},
		{"negative port", Options{Forward: map[int]int{-5: 80}}, "Forward -5 → 80"},
		{"not a deb", Options{Debs: []string{filepath.Join(dir, "shelldon.tar")}}, "not a .deb"},
		{"missing deb", Options{Debs: []string{filepath.Join(dir, "gone.deb")}}, "gone.deb"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.opts.check()
			switch {
			case tt.wantErr == "" && err != nil:
				t.Errorf("check(%+v) = %v, want nil", tt.opts, err)
			case tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)):
				t.Errorf("check(%+v) = %v, want an error with %q", tt.opts, err, tt.wantErr)
			}
		})
	}
}

func TestBootFiles(t *testing.T) {
	tests := []struct {
		name       string
		files      []string
		wantKernel string // base name; "" means an error
	}{
		{"kernel and initrd", []string{"vmlinuz-6.1.0-50-cloud-amd64", "initrd.img-6.1.0-50-cloud-amd64", "config-6.1.0-50-cloud-amd64"}, "vmlinuz-6.1.0-50-cloud-amd64"},
		{"the newest of two", []string{"vmlinuz-6.1.0-49-cloud-amd64", "initrd.img-6.1.0-49-cloud-amd64", "vmlinuz-6.1.0-50-cloud-amd64", "initrd.img-6.1.0-50-cloud-amd64"}, "vmlinuz-6.1.0-50-cloud-amd64"},
		{"no initrd", []string{"vmlinuz-6.1.0-50-cloud-amd64"}, ""},
		{"no kernel", []string{"initrd.img-6.1.0-50-cloud-amd64"}, ""},
		{"empty /boot", nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			if err := os.Mkdir(filepath.Join(root, "boot"), 0o755); err != nil {
				t.Fatal(err)
			}
			for _, f := range tt.files {
				if err := os.WriteFile(filepath.Join(root, "boot", f), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			kernel, initrd, err := bootFiles(root)
			if tt.wantKernel == "" {
				if err == nil {
					t.Errorf("bootFiles(%v) = %s, %s, want an error", tt.files, kernel, initrd)
				}
				return
			}
			if err != nil || filepath.Base(kernel) != tt.wantKernel {
				t.Fatalf("bootFiles(%v) = %s, %v; want %s", tt.files, kernel, err, tt.wantKernel)
			}
			if want := "initrd.img-" + strings.TrimPrefix(tt.wantKernel, "vmlinuz-"); filepath.Base(initrd) != want {
				t.Errorf("bootFiles(%v) initrd = %s, want %s", tt.files, initrd, want)
			}
		})
	}
}

// TestConfigure sets up a bare root twice (a root may already hold any of
// the files, read-only) and checks what the guest boots with.
func TestConfigure(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc/systemd/network"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "etc/machine-id"), nil, 0o444); err != nil {
		t.Fatal(err)
	}
	key := []byte("ssh-ed25519 AAAA test\n")
	for range 2 {
		if err := configure(root, key); err != nil {
			t.Fatalf("configure: %v", err)
		}
	}
	id, err := os.ReadFile(filepath.Join(root, "etc/machine-id"))
	if err != nil || len(strings.TrimSpace(string(id))) != 32 {
		t.Errorf("machine-id = %q, %v; want 32 hex digits", id, err)
	}
	got, err := os.ReadFile(filepath.Join(root, "root/.ssh/authorized_keys"))
	if err != nil || string(got) != string(key) {
		t.Errorf("authorized_keys = %q, %v; want %q", got, err, key)
	}
	if fi, err := os.Stat(filepath.Join(root, "root/.ssh/authorized_keys")); err != nil {
		t.Error(err)
	} else if fi.Mode().Perm() != 0o600 {
		t.Errorf("authorized_keys mode = %v, want 0600", fi.Mode())
	}
	for link, want := range enabledUnits {
		if target, err := os.Readlink(filepath.Join(root, "etc/systemd/system", link)); err != nil || target != want {
			t.Errorf("%s → %q, %v; want %s", link, target, err, want)
		}
	}
}

// TestReservedDiskHoldsItsBlocks: a guest's disk has every block it may
// write reserved on the host before it boots, so a host disk that fills
// up later cannot pause the guest (qemu stops a VM whose write fails for
// want of space, and a stopped guest answers nothing).
func TestReservedDiskHoldsItsBlocks(t *testing.T) {
	const size = 64 << 20
	path := filepath.Join(t.TempDir(), "disk.img")
	if err := makeSparseFile(path, size); err != nil {
		t.Fatal(err)
	}
	if err := reserveBlocks(path); err != nil {
		t.Fatalf("reserveBlocks(%s): %v", path, err)
	}
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	if got := st.Blocks * 512; got < size {
		t.Errorf("a reserved %d MiB disk holds %d KiB on the host, want all of it", size>>20, got>>10)
	}
}
