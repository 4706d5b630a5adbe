package main

import (
	"fmt"
	"path/filepath"

	"shelldon/config"
)

// repositoryPet is where `make run` keeps its pet: var in the repository.
const repositoryPet = "var"

// chatSocket is the socket `shelldon chat` talks to: the configured one,
// unless nothing configured one and no pet is there — then the pet of
// `make run`, in ./var, if one is there (as when the chat is started from
// the repository). note tells the owner of that choice; it is empty when
// the configured socket is used.
func chatSocket(configured string) (socket, note string) {
	if configured != config.Default().Socket || fileExists(configured) {
		return configured, ""
	}
	local, err := filepath.Abs(filepath.Join(repositoryPet, "bus.sock"))
	if err != nil || !fileExists(local) {
		return configured, ""
	}
	return local, fmt.Sprintf("(No pet at %s; talking to the one in ./%s, which `make run` started. --state-dir DIR names another.)", configured, repositoryPet)
}
