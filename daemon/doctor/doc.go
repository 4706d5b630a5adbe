// Package doctor inspects the host for what shelldon needs — systemd,
// systemd-nspawn, the memory cgroup controller, SPI for the panel, a
// writable state directory, a running core, a configured and reachable
// model provider — and says, one line each, what is missing and how to
// fix it.
package doctor
