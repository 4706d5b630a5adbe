package config

// Preset is a provider an owner is likely to have, as a setup offers it:
// where it answers, a model there that calls tools (shelldon's turns are
// tool calls; a model without them cannot act, and the broker says so
// with ErrToolsUnsupported), and what else the owner needs. The broker's
// conformance suite holds a recorded exchange of each
// (broker/testdata/providers/<name>), and docs/configuration.md lists
// them in its "preset" table, which a test holds to this list.
type Preset struct {
	// Name is the [[provider]] name and the word the owner picks it by.
	Name    string
	BaseURL string
	// Model is a default that calls tools; the owner may name another.
	Model string
	// NeedsKey says the provider refuses a request without an API key;
	// a local server takes none.
	NeedsKey bool
	// Needs is what else the owner must have, in a few words.
	Needs string
}

// Presets are the providers a setup offers, in the order it lists them.
var Presets = []Preset{
	{Name: "openai", BaseURL: "https://api.openai.com/v1", Model: "gpt-4o-mini", NeedsKey: true,
		Needs: "a key from platform.openai.com"},
	{Name: "openrouter", BaseURL: "https://openrouter.ai/api/v1", Model: "openai/gpt-4o-mini", NeedsKey: true,
		Needs: "a key from openrouter.ai; a model whose page lists tools"},
	{Name: "ollama", BaseURL: "http://localhost:11434/v1", Model: "qwen2.5:7b",
		Needs: "ollama pull qwen2.5:7b; on another machine, its address and OLLAMA_HOST=0.0.0.0 there"},
	{Name: "llamacpp", BaseURL: "http://localhost:8080/v1", Model: "qwen2.5-7b-instruct",
		Needs: "llama-server --jinja with a tool-aware model such as Qwen2.5 7B Instruct"},
	{Name: "vllm", BaseURL: "http://localhost:8000/v1", Model: "Qwen/Qwen2.5-7B-Instruct",
		Needs: "vllm serve with --enable-auto-tool-choice --tool-call-parser hermes"},
	{Name: "groq", BaseURL: "https://api.groq.com/openai/v1", Model: "llama-3.3-70b-versatile", NeedsKey: true,
		Needs: "a key from console.groq.com"},
	{Name: "deepseek", BaseURL: "https://api.deepseek.com", Model: "deepseek-chat", NeedsKey: true,
		Needs: "a key from platform.deepseek.com; deepseek-reasoner calls no tools"},
	{Name: "mistral", BaseURL: "https://api.mistral.ai/v1", Model: "mistral-small-latest", NeedsKey: true,
		Needs: "a key from console.mistral.ai"},
	{Name: "gemini", BaseURL: "https://generativelanguage.googleapis.com/v1beta/openai", Model: "gemini-2.5-flash", NeedsKey: true,
		Needs: "a key from aistudio.google.com; Gemma models call no tools there"},
}

// PresetNamed is the preset called name.
func PresetNamed(name string) (Preset, bool) {
	for _, p := range Presets {
		if p.Name == name {
			return p, true
		}
	}
	return Preset{}, false
}

// Provider is the [[provider]] table the preset stands for: its key, when
// it needs one, read from the systemd credential <name>-api-key.
func (p Preset) Provider() Provider {
	prov := Provider{Name: p.Name, BaseURL: p.BaseURL, Model: p.Model}
	if p.NeedsKey {
		prov.APIKeyCredential = p.Name + "-api-key"
	}
	return prov
}
