// Package skills reads the pet's Agent Skills: folders under the
// workspace's skills/, each with a SKILL.md whose front matter names the
// skill and says when to use it, and whose body holds the instructions.
//
// A turn's prompt carries each skill's name and description (within a
// budget); the model reads a body with read_file when a task calls for
// it, and a script a skill ships runs only as any command does, through
// the policy and the sandbox. Skills live in the workspace, so writing or
// changing one is a change set the owner approves, with a SKILL.md
// flagged for a second look (policy).
//
// Everything is read beneath the workspace without following a link, and
// bounded: MaxSkills folders, the first maxHead bytes of each SKILL.md,
// names of MaxName and descriptions of MaxDescription characters.
package skills
