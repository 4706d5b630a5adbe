package config

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

const envPrefix = "SHELLDON_"

// The one-provider shortcut: SHELLDON_PROVIDER_URL replaces the chain.
const (
	envProviderURL   = "SHELLDON_PROVIDER_URL"
	envProviderName  = "SHELLDON_PROVIDER_NAME"
	envProviderModel = "SHELLDON_PROVIDER_MODEL"
	envProviderKey   = "SHELLDON_PROVIDER_KEY"

	envProviderDefaultName = "env"
)

// Variables the project uses for things other than configuration (see the
// package documentation); Load leaves them alone.
var (
	nonConfigVariables      = []string{"SHELLDON_CONFIG", "SHELLDON_REQUIRE_ALL"}
	nonConfigVariablePrefix = "SHELLDON_TEST_"
)

// envName is the variable that overrides a key: timeouts.worker is
// SHELLDON_TIMEOUTS_WORKER.
func envName(key string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(key, ".", "_"))
}

// overridable lists the settings that have an environment variable.
func overridable() []setting {
	var list []setting
	for _, s := range settings {
		if s.set != nil {
			list = append(list, s)
		}
	}
	return list
}

// knownVariables lists every SHELLDON_ variable Load accepts, for suggestions.
func knownVariables() []string {
	var names []string
	for _, s := range overridable() {
		names = append(names, envName(s.key))
	}
	names = append(names, envProviderURL, envProviderName, envProviderModel, envProviderKey)
	return append(names, nonConfigVariables...)
}

// lookupEnv finds name in environ, a list of "NAME=value" entries. The
// last entry wins, as in exec.Cmd.Env, so a caller may append an override
// (the command line turns --state-dir into SHELLDON_STATE_DIR this way).
func lookupEnv(environ []string, name string) (string, bool) {
	value, found := "", false
	for _, entry := range environ {
		if k, v, ok := strings.Cut(entry, "="); ok && k == name {
			value, found = v, true
		}
	}
	return value, found
}

// applyEnvironment applies the SHELLDON_ overrides in environ to c and
// records in o which keys they set. It refuses unknown SHELLDON_ variables.
func applyEnvironment(c *Config, environ []string, o *origins) error {
	var names []string
	for _, entry := range environ {
		if name, _, ok := strings.Cut(entry, "="); ok && strings.HasPrefix(name, envPrefix) && !slices.Contains(names, name) {
			names = append(names, name)
		}
	}
	var errs []error
	shortcut := map[string]string{}
	for _, name := range names {
		value, _ := lookupEnv(environ, name)
		switch {
		case slices.Contains(nonConfigVariables, name), strings.HasPrefix(name, nonConfigVariablePrefix):
			continue
		case name == envProviderURL || name == envProviderName || name == envProviderModel || name == envProviderKey:
			if value != "" {
				shortcut[name] = value
			}
			continue
		}
		s, known := overrideFor(name)
		if !known {
			errs = append(errs, unknownVariableError(name))
			continue
		}
		if value == "" {
			continue
		}
		if err := s.set(c, value); err != nil {
			errs = append(errs, &configError{source: sourceEnvironment, key: name, problem: err.Error()})
			continue
		}
		o.fromEnv[s.key] = true
	}
	if err := applyProviderShortcut(c, shortcut, o); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

func overrideFor(name string) (setting, bool) {
	for _, s := range overridable() {
		if envName(s.key) == name {
			return s, true
		}
	}
	return setting{}, false
}

func unknownVariableError(name string) error {
	fix := "unset it; known variables: " + strings.Join(knownVariables(), ", ") + ", " + nonConfigVariablePrefix + "*"
	if guess, ok := closest(name, knownVariables(), 3); ok {
		fix = fmt.Sprintf("did you mean %s? otherwise unset it", guess)
	}
	return &configError{source: sourceEnvironment, key: name, problem: "not a shelldon variable", fix: fix}
}

// applyProviderShortcut replaces the provider chain with the one provider
// the SHELLDON_PROVIDER_ variables describe, if SHELLDON_PROVIDER_URL is set.
func applyProviderShortcut(c *Config, vars map[string]string, o *origins) error {
	url, ok := vars[envProviderURL]
	if !ok {
		for _, name := range []string{envProviderName, envProviderModel, envProviderKey} {
			if _, set := vars[name]; set {
				return &configError{source: sourceEnvironment, key: name, problem: "set without " + envProviderURL,
					fix: "set " + envProviderURL + " too to use a provider from the environment, or unset " + name}
			}
		}
		return nil
	}
	model, ok := vars[envProviderModel]
	if !ok {
		return &configError{source: sourceEnvironment, key: envProviderModel, problem: "not set, but " + envProviderURL + " is",
			fix: "set it to the model to ask, like " + envProviderModel + "=gpt-4o-mini"}
	}
	name, ok := vars[envProviderName]
	if !ok {
		name = envProviderDefaultName
	}
	c.Providers = []Provider{{Name: name, BaseURL: url, Model: model, APIKey: vars[envProviderKey]}}
	o.fromEnv["provider"] = true
	return nil
}
