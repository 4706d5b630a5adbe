// Package giveback returns the memory a process holds to the kernel once
// the process has gone quiet: on a 416 MB board every resident megabyte
// counts, and the pet idles between turns for minutes or hours. Core, the
// broker and the panel each ask when their part of a turn is done; asks
// close together make one collection, and a longer quiet returns the
// collector's free memory and lets go of the pages of the binary the
// process has mapped, which the kernel maps 64 KB at a time around each
// page a turn runs.
package giveback
