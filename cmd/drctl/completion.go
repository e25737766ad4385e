package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/urfave/cli/v2"
)

// Shell completion asks drctl itself: the scripts call
// `drctl WORDS... --generate-bash-completion`, which prints the commands or
// flags that may come next (urfave/cli), so they stay right as commands are
// added, and the values drctl knows (completion_values.go), with the word
// being completed in $DRCTL_COMPLETE_CUR.

const bashCompletion = `# bash completion for drctl. Load it with:  source <(drctl completion bash)
_drctl_complete() {
  local cur="${COMP_WORDS[COMP_CWORD]}"
  local -a words=("${COMP_WORDS[@]:1:COMP_CWORD-1}")
  if [[ "$cur" == -* ]]; then words+=("$cur"); fi
  local IFS=$'\n'
  COMPREPLY=($(compgen -W "$(DRCTL_COMPLETE_CUR="$cur" "${COMP_WORDS[0]}" "${words[@]}" --generate-bash-completion 2>/dev/null)" -- "$cur"))
}
complete -o default -F _drctl_complete drctl
`

const zshCompletion = `#compdef drctl
# zsh completion for drctl. Load it with:  source <(drctl completion zsh)
_drctl() {
  local -a opts words_before
  local cur=${words[CURRENT]}
  words_before=(${words[2,CURRENT-1]})
  if [[ $cur == -* ]]; then words_before+=($cur); fi
  opts=("${(@f)$(DRCTL_COMPLETE_CUR=$cur ${words[1]} ${words_before[@]} --generate-bash-completion 2>/dev/null)}")
  if [[ -n ${opts[1]} ]]; then
    _describe 'drctl' opts
  else
    _files
  fi
}
if (( $+functions[compdef] )); then compdef _drctl drctl; fi
`

// leafComplete completes a command without subcommands: its flags after a
// "-", and nothing otherwise, so that the shell falls back to file names
// (urfave/cli would offer "help" and "h" there, hiding the plan file of
// drctl apply).
func leafComplete(c *cli.Command) cli.BashCompleteFunc {
	flags := cli.DefaultCompleteWithFlags(c)
	return func(ctx *cli.Context) {
		// As urfave/cli's own completion: the word before
		// --generate-bash-completion is the one being completed, or (when
		// the script says the current word is a value) the one before it.
		n := len(os.Args)
		if n < 2 {
			return
		}
		if completeValues(ctx, os.Args[n-2]) {
			return
		}
		if strings.HasPrefix(os.Args[n-2], "-") {
			flags(ctx)
		}
	}
}

func completionCommand() *cli.Command {
	return &cli.Command{
		Name:      "completion",
		Usage:     "print the shell completion script for bash, zsh or fish",
		ArgsUsage: "SHELL",
		Description: "completion prints a script that completes drctl's commands and flags in bash, zsh or fish, and the\n" +
			"values drctl knows: cluster names (--to, reseed, fence, unfence), the unfinished run ids of this machine's\n" +
			"journal (resume, abort), recorded drill ids (drill report) and drill names (drill run). The values come from\n" +
			"the topology file and the local journal: a TAB never waits for a cluster.\n" +
			"Load it in the current shell, or install it where your shell loads completions from.\n\n" +
			"Examples:\n   source <(drctl completion bash)\n   drctl completion zsh > \"${fpath[1]}/_drctl\"\n" +
			"   drctl completion fish > ~/.config/fish/completions/drctl.fish",
		Action: func(c *cli.Context) error {
			var script string
			switch shell := c.Args().First(); shell {
			case "bash":
				script = bashCompletion
			case "zsh":
				script = zshCompletion
			case "fish":
				s, err := c.App.ToFishCompletion()
				if err != nil {
					return err
				}
				script = s + fishFiles(c.App)
			case "":
				return withCode(exitBadInput, fmt.Errorf("name the shell: drctl completion bash|zsh|fish"))
			default:
				return withCode(exitBadInput, fmt.Errorf("no completion for %q; use bash, zsh or fish", shell))
			}
			_, err := io.WriteString(c.App.Writer, script)
			return err
		},
	}
}

// fishFiles completes file names only where drctl takes a file: urfave/cli's
// fish script lets fish offer files everywhere (after "drctl mirror ", say).
// Files are turned off for drctl, then forced back on for the flags that
// take a file (TakesFile) and for the commands whose argument is a file
// (ARGS ending in .json); -o completes its three formats.
func fishFiles(app *cli.App) string {
	var b strings.Builder
	b.WriteString("\n# Files only where drctl takes one (added by drctl completion fish).\n")
	b.WriteString("complete -c drctl -f\n")
	fmt.Fprintf(&b, "complete -c drctl -l %s -s o -x -a 'table wide json yaml'\n", outputFlag.Name)
	var walk func(cond string, flags []cli.Flag, args string, subs []*cli.Command)
	walk = func(cond string, flags []cli.Flag, args string, subs []*cli.Command) {
		for _, f := range flags {
			sf, ok := f.(*cli.StringFlag)
			if !ok || !sf.TakesFile {
				continue
			}
			fmt.Fprintf(&b, "complete -c drctl%s -l %s", cond, sf.Name)
			for _, a := range sf.Aliases {
				if len(a) == 1 {
					fmt.Fprintf(&b, " -s %s", a)
				}
			}
			b.WriteString(" -r -F\n")
		}
		if strings.HasSuffix(args, ".json") {
			fmt.Fprintf(&b, "complete -c drctl%s -F\n", cond)
		}
		for _, c := range subs {
			walk(" -n '__fish_seen_subcommand_from "+c.Name+"'", c.Flags, c.ArgsUsage, c.Subcommands)
		}
	}
	walk("", app.Flags, "", app.Commands)
	fishValues(&b, app)
	return b.String()
}

// fishValues completes the values drctl knows (flagValues, argValues) by
// asking drctl with the words typed so far, as the bash and zsh scripts do;
// -k keeps drctl's order (newest run or drill first).
func fishValues(b *strings.Builder, app *cli.App) {
	const ask = `'(env ` + completeCurEnv + `=(commandline -ct) (commandline -opc) --generate-bash-completion 2>/dev/null)'`
	cond := func(path []string) string {
		var parts []string
		for _, p := range path {
			parts = append(parts, "__fish_seen_subcommand_from "+p)
		}
		return " -n '" + strings.Join(parts, "; and ") + "'"
	}
	var walk func(path []string, cmds []*cli.Command)
	walk = func(path []string, cmds []*cli.Command) {
		for _, c := range cmds {
			p := append(append([]string(nil), path...), c.Name)
			for _, f := range c.Flags {
				if flagValues[f.Names()[0]] != noValues {
					fmt.Fprintf(b, "complete -c drctl%s -l %s -x -k -a %s\n", cond(p), f.Names()[0], ask)
				}
			}
			if argValues[strings.Join(p, " ")] != noValues {
				fmt.Fprintf(b, "complete -c drctl%s -x -k -a %s\n", cond(p), ask)
			}
			walk(p, c.Subcommands)
		}
	}
	walk(nil, app.Commands)
}
