// Package sdnotify tells systemd how a shelldon service is doing, over
// the sd_notify protocol: READY once it serves, STATUS lines that
// `systemctl status` shows (what the pet is doing), WATCHDOG pings while
// its event loop still answers, and STOPPING on the way out. Outside
// systemd ($NOTIFY_SOCKET unset) every call is a no-op.
package sdnotify
