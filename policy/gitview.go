package policy

import (
	"slices"
	"strings"
)

// What a credential-shaped file held lives on in git's objects once a
// repository tracked it (committed, staged, stashed or only added once),
// and every view of git's prints it: git diff shows the file deleted from
// the masked working tree with its content, git show and git log -p show
// it in history, and git cat-file -p, git show or git diff print a blob
// by its object name. The sandbox therefore masks the content itself:
// every blob that a credential-shaped path ([Denied]) ever held in the
// repository's history, index or stash, and every blob that no path
// reaches at all, is replaced, for git, by a blob that says it is masked
// (git's replace refs), and the object store lies outside the workspace
// tree, so that no other program reads the objects. Those views stay
// free. What the policy still decides is which git calls would see past
// the masks, and those ask:
//   - --no-replace-objects (git itself) and the variables of
//     gitUnmaskingVariables (a shell assignment), which turn the
//     replacements off or point git elsewhere;
//   - git cat-file --batch-all-objects with --batch or --batch-command,
//     which git runs with the replacements off;
//   - naming a credential-shaped path (HEAD:.env, git blame .env), as
//     before: the owner is asked whatever the mask would show.

// GitCredentialPathspecs are git pathspecs that match, at any depth,
// every path [Denied] refuses and more: each credential rule as a
// case-insensitive glob over one component (".env*", "*.pem", "*token",
// "*token[._-]*"), as the last component and as a directory, and every
// path with a byte outside ASCII, since lowercasing such a name may give
// an ASCII rule's letters (the Kelvin sign is a k) where git's icase
// would not. The sandbox limits its walk through history to them and
// judges each path it finds with Denied.
func GitCredentialPathspecs() []string {
	globs := credentialGlobs()
	specs := make([]string, 0, 2*len(globs)+2)
	seen := map[string]bool{}
	add := func(magic, pattern string) {
		for _, spec := range []string{":(" + magic + ")**/" + pattern, ":(" + magic + ")**/" + pattern + "/**"} {
			if !seen[spec] {
				seen[spec] = true
				specs = append(specs, spec)
			}
		}
	}
	for _, g := range globs {
		add("glob,icase", g)
	}
	add("glob", "*[\x80-\xff]*")
	return specs
}

// credentialGlobs are the credential rules as glob patterns over one
// name: an exact name is itself, a prefix P is P*, a suffix S is *S, and
// a word W is *W or *W[._-]*.
func credentialGlobs() []string {
	var globs []string
	for _, r := range credentialRules.get() {
		switch r.match {
		case credentialExact:
			globs = append(globs, r.text)
		case credentialPrefix:
			globs = append(globs, r.text+"*")
		case credentialSuffix:
			globs = append(globs, "*"+r.text)
		case credentialWord:
			globs = append(globs, "*"+r.text, "*"+r.text+"["+credentialWordEnds+"]*")
		}
	}
	return globs
}

// gitUnmaskingVariables make git read objects past the sandbox's masks of
// credential files: they turn replace refs off (GIT_NO_REPLACE_OBJECTS,
// core.useReplaceRefs through the GIT_CONFIG_* of the command line),
// move where git looks for them (GIT_REPLACE_REF_BASE), or point git at
// another repository or object store.
var gitUnmaskingVariables = []string{
	"GIT_NO_REPLACE_OBJECTS", "GIT_REPLACE_REF_BASE", "GIT_CONFIG_COUNT", "GIT_CONFIG_PARAMETERS",
	"GIT_DIR", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY", "GIT_ALTERNATE_OBJECT_DIRECTORIES",
}

// gitUnmasks reports whether setting the variable name may make git show
// what the sandbox masks.
func gitUnmasks(name string) bool {
	return slices.Contains(gitUnmaskingVariables, name) ||
		strings.HasPrefix(name, "GIT_CONFIG_KEY_") || strings.HasPrefix(name, "GIT_CONFIG_VALUE_")
}

// gitBatchLong are git cat-file's long options that start with "batch",
// among which git's parser resolves an abbreviation.
var gitBatchLong = []string{"batch", "batch-check", "batch-command", "batch-all-objects"}

// gitPrintsEveryObject reports whether cat-file's arguments print the
// contents of every object as stored: --batch-all-objects (which turns
// replace refs off) with --batch or --batch-command; --batch-check prints
// names, types and sizes only.
func gitPrintsEveryObject(args []string) bool {
	all, contents := false, false
	for _, arg := range args {
		if arg == "--" {
			break
		}
		name, ok := strings.CutPrefix(arg, "--")
		if !ok || !strings.HasPrefix(name, "batch") {
			continue
		}
		name, _, _ = strings.Cut(name, "=")
		switch gitResolveLong(name, gitBatchLong) {
		case "batch-all-objects":
			all = true
		case "batch", "batch-command":
			contents = true
		}
	}
	return all && contents
}

// gitResolveLong returns the long option name stands for in git's parser:
// itself when it is one, else the one option it abbreviates, else "".
func gitResolveLong(name string, options []string) string {
	if slices.Contains(options, name) {
		return name
	}
	found := ""
	for _, option := range options {
		if strings.HasPrefix(option, name) {
			if found != "" {
				return ""
			}
			found = option
		}
	}
	return found
}
