package skills_test

import (
	"fmt"

	"shelldon/worker/skills"
)

func ExampleParse() {
	name, description, err := skills.Parse([]byte("---\nname: pdf-forms\ndescription: >\n  Fills PDF forms\n  from a CSV.\n---\n# How\n..."))
	fmt.Println(name, "|", description, "|", err)
	// Output: pdf-forms | Fills PDF forms from a CSV. | <nil>
}
