// Package giveback returns the memory a process's garbage collector holds
// to the kernel once the process has gone quiet: on a 416 MB board every
// resident megabyte counts, and the pet idles between turns for minutes or
// hours. Core, the broker and the panel each ask when their part of a turn
// is done; asks close together make one collection.
package giveback
