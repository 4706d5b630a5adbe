package telegramtest

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"mime/multipart"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// maxRequestBody is Telegram's upload limit for bots.
const maxRequestBody = 50 << 20

// apiError is an error answer of the Bot API.
type apiError struct {
	code        int
	description string
	retryAfter  int
}

func (e *apiError) Error() string { return e.description }

func badRequest(format string, args ...any) error {
	return &apiError{code: http.StatusBadRequest, description: "Bad Request: " + fmt.Sprintf(format, args...)}
}

// upload is a file part of a multipart request.
type upload struct {
	name    string
	content []byte
}

// request is one Bot API call's parameters, however they were sent.
type request struct {
	params map[string]string
	files  map[string]upload
}

// readRequest reads the parameters of a call from the query string and a
// multipart, JSON or url-encoded body, the encodings the Bot API accepts.
func readRequest(w http.ResponseWriter, r *http.Request) (request, error) {
	req := request{params: map[string]string{}, files: map[string]upload{}}
	for name, values := range r.URL.Query() {
		req.params[name] = values[0]
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxRequestBody))
	if err != nil {
		return req, fmt.Errorf("read body: %w", err)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return req, nil // go-telegram/bot sends an empty multipart body for calls without parameters
	}
	mediaType, typeParams, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return req, fmt.Errorf("content type: %w", err)
	}
	switch mediaType {
	case "multipart/form-data":
		err = req.readMultipart(body, typeParams["boundary"])
	case "application/json":
		err = req.readJSON(body)
	case "application/x-www-form-urlencoded":
		err = req.readForm(body)
	default:
		err = fmt.Errorf("unsupported content type %q", mediaType)
	}
	return req, err
}

func (req *request) readMultipart(body []byte, boundary string) error {
	if boundary == "" {
		return errors.New("multipart body without boundary")
	}
	parts := multipart.NewReader(bytes.NewReader(body), boundary)
	for {
		part, err := parts.NextPart()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("multipart: %w", err)
		}
		content, err := io.ReadAll(part)
		if err != nil {
			return fmt.Errorf("multipart part %q: %w", part.FormName(), err)
		}
		name := part.FormName()
		req.params[name] = string(content)
		// FileName() hides an empty filename="", which is still a file part.
		_, disposition, _ := mime.ParseMediaType(part.Header.Get("Content-Disposition"))
		if fileName, isFile := disposition["filename"]; isFile {
			req.files[name] = upload{name: fileName, content: content}
		}
	}
}

func (req *request) readJSON(body []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(body, &fields); err != nil {
		return fmt.Errorf("JSON body: %w", err)
	}
	for name, raw := range fields {
		var text string
		switch {
		case string(raw) == "null":
			continue
		case json.Unmarshal(raw, &text) == nil:
			req.params[name] = text
		default:
			req.params[name] = string(raw)
		}
	}
	return nil
}

func (req *request) readForm(body []byte) error {
	values, err := url.ParseQuery(string(body))
	if err != nil {
		return fmt.Errorf("url-encoded body: %w", err)
	}
	for name, vs := range values {
		req.params[name] = vs[0]
	}
	return nil
}

// int reads an integer parameter; absent gives fallback.
func (req request) int(name string, fallback int64) (int64, error) {
	raw, ok := req.params[name]
	if !ok || strings.TrimSpace(raw) == "" {
		return fallback, nil
	}
	n, err := strconv.ParseInt(strings.TrimSpace(raw), 10, 64)
	if err != nil {
		return 0, badRequest("invalid %s specified", name)
	}
	return n, nil
}
