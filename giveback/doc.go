// Package giveback returns the memory a process holds to the kernel once
// the process has gone quiet: on a 416 MB board every resident megabyte
// counts, and the pet idles between turns for minutes or hours. Core, the
// broker and the panel each ask when their part of a turn is done; asks
// close together make one collection, and a longer quiet returns the
// collector's free memory and lets go of the pages of the binary the
// process has mapped, which the kernel maps 64 KB at a time around each
// page a turn runs. A chore the process runs by its own timer (core's
// minute check, the panel's minute redraw) puts none of this off: what it
// touched goes back as soon as it is done if the process had let go
// already (AfterChore).
package giveback
