//! Programs that run another command: `sudo rm`, `timeout 5 rm`, `env -S 'rm x'`,
//! `find . -exec rm {} +`, `watch 'rm x'`. Deny and ask rules look through them (the
//! command a wrapper runs is matched too), and the splitter follows a wrapped shell
//! (`sudo sh -c '…'`) or a wrapper's shell string (`watch '…'`, `flock f -c '…'`).
//!
//! Each wrapper's options are skipped, with the value of those that take one as the next
//! word (`sudo -u root rm`: the command is `rm`, not `root`), then its leading operands
//! (`timeout`'s duration, `flock`'s lock file, `chrt`'s priority, `taskset`'s mask).

/// A word list with, for each word, whether it is computed when the command runs (an
/// expansion, a substitution, an unquoted glob or brace expansion).
pub(super) type Words = (Vec<String>, Vec<bool>);

struct Wrapper {
    name: &'static str,
    /// Options whose value is the next word.
    takes_value: &'static [&'static str],
    /// Operands before the command.
    operands: usize,
    /// `NAME=value` words before the command are assignments (env, sudo).
    assignments: bool,
}

const fn w(
    name: &'static str,
    takes_value: &'static [&'static str],
    operands: usize,
    assignments: bool,
) -> Wrapper {
    Wrapper {
        name,
        takes_value,
        operands,
        assignments,
    }
}

/// The wrappers, with their options that take a value.
const WRAPPERS: &[Wrapper] = &[
    w(
        "sudo",
        &[
            "-u",
            "-g",
            "-h",
            "-p",
            "-C",
            "-D",
            "-r",
            "-t",
            "-T",
            "-U",
            "--user",
            "--group",
            "--host",
            "--prompt",
            "--close-from",
            "--chdir",
            "--role",
            "--type",
            "--command-timeout",
            "--other-user",
        ],
        0,
        true,
    ),
    w("doas", &["-u", "-C"], 0, false),
    w("env", &["-u", "--unset", "-C", "--chdir"], 0, true),
    w("command", &[], 0, false),
    w("builtin", &[], 0, false),
    w("exec", &["-a"], 0, false),
    w("nice", &["-n", "--adjustment"], 0, false),
    w("nohup", &[], 0, false),
    w("time", &["-f", "--format", "-o", "--output"], 0, false),
    w(
        "timeout",
        &["-s", "--signal", "-k", "--kill-after"],
        1,
        false,
    ),
    w(
        "xargs",
        &[
            "-a",
            "--arg-file",
            "-d",
            "--delimiter",
            "-E",
            "-I",
            "-L",
            "--max-lines",
            "-n",
            "--max-args",
            "-P",
            "--max-procs",
            "-s",
            "--max-chars",
            "--process-slot-var",
        ],
        0,
        false,
    ),
    w(
        "stdbuf",
        &["-i", "-o", "-e", "--input", "--output", "--error"],
        0,
        false,
    ),
    w("setsid", &[], 0, false),
    w("chrt", &[], 1, false),
    w(
        "ionice",
        &[
            "-c",
            "--class",
            "-n",
            "--classdata",
            "-p",
            "--pid",
            "-P",
            "--pgid",
            "-u",
            "--uid",
        ],
        0,
        false,
    ),
    w("taskset", &[], 1, false),
    w("unbuffer", &[], 0, false),
    w(
        "watch",
        &["-n", "--interval", "-q", "--equexit", "--differences"],
        0,
        false,
    ),
    w(
        "strace",
        &[
            "-o", "-e", "-p", "-s", "-a", "-b", "-I", "-O", "-P", "-S", "-u", "-E", "-X",
        ],
        0,
        false,
    ),
    w(
        "ltrace",
        &[
            "-o", "-e", "-p", "-s", "-a", "-n", "-u", "-E", "-x", "-A", "-D", "-F", "-l",
        ],
        0,
        false,
    ),
    w(
        "flock",
        &["-w", "--timeout", "-E", "--conflict-exit-code"],
        1,
        false,
    ),
    w("caffeinate", &["-t", "-w"], 0, false),
    w("busybox", &[], 0, false),
];

/// The program name of a command word: `/usr/bin/rm` and `./rm` are `rm`.
pub(super) fn program(word: &str) -> &str {
    word.rsplit('/').next().unwrap_or(word)
}

/// What a wrapper runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Runs {
    /// A command given as words (`sudo rm x`).
    Words(Words),
    /// A shell string (`watch 'rm x'`, `flock f -c 'rm x'`), which `sh -c` runs.
    Script {
        text: String,
        /// The string holds an expansion: what runs is not known.
        computed: bool,
    },
}

/// What the wrapper `words[0]` runs; `None` when it is no wrapper or runs nothing.
pub(super) fn inner(words: &Words) -> Option<Runs> {
    let (ws, cs) = words;
    let name = program(ws.first()?);
    let wrapper = WRAPPERS.iter().find(|w| w.name == name)?;
    let mut i = 1;
    let computed = |k: usize| cs.get(k).copied().unwrap_or(false);
    while i < ws.len() {
        let word = ws[i].as_str();
        if word == "--" {
            i += 1;
            break;
        }
        if name == "env" && (word == "-S" || word == "--split-string") {
            let split = ws.get(i + 1)?;
            return Some(split_string(split, computed(i + 1), ws, cs, i + 2));
        }
        if name == "env" && (word.starts_with("--split-string=") || word.starts_with("-S")) {
            let value = word
                .strip_prefix("--split-string=")
                .or_else(|| word.strip_prefix("-S"))
                .unwrap_or_default();
            return Some(split_string(value, computed(i), ws, cs, i + 1));
        }
        if name == "flock" && (word == "-c" || word == "--command") {
            return ws.get(i + 1).map(|t| Runs::Script {
                text: t.clone(),
                computed: computed(i + 1),
            });
        }
        if word.len() > 1 && (word.starts_with('-') || (name == "nice" && word.starts_with('+'))) {
            i += if wrapper.takes_value.contains(&word) {
                2
            } else {
                1
            };
            continue;
        }
        if wrapper.assignments && word.contains('=') && !word.starts_with('=') {
            i += 1;
            continue;
        }
        break;
    }
    // The operands before the command (`timeout 5`, `flock FILE`, `chrt 10`).
    i += wrapper.operands;
    if name == "flock" && ws.get(i).is_some_and(|w| w == "-c" || w == "--command") {
        return ws.get(i + 1).map(|t| Runs::Script {
            text: t.clone(),
            computed: computed(i + 1),
        });
    }
    if i >= ws.len() {
        return None;
    }
    if name == "watch" {
        // watch runs its arguments joined by spaces with `sh -c`.
        return Some(Runs::Script {
            text: ws[i..].join(" "),
            computed: cs[i.min(cs.len())..].iter().any(|c| *c),
        });
    }
    Some(Runs::Words((
        ws[i..].to_vec(),
        cs.get(i..).map(<[bool]>::to_vec).unwrap_or_default(),
    )))
}

/// `env -S 'rm -rf x' more`: the string split at blanks, then the words after it.
fn split_string(s: &str, computed: bool, ws: &[String], cs: &[bool], rest: usize) -> Runs {
    let mut words: Vec<String> = s.split_whitespace().map(str::to_string).collect();
    let mut flags = vec![computed; words.len()];
    words.extend(ws.get(rest..).unwrap_or_default().iter().cloned());
    flags.extend(cs.get(rest..).unwrap_or_default().iter().copied());
    Runs::Words((words, flags))
}

/// The commands a simple command may run: itself, each command its wrappers run in turn
/// (`sudo timeout 5 rm x`: also `timeout 5 rm x` and `rm x`), and the commands of `find`'s
/// `-exec`, `-execdir`, `-ok` and `-okdir`. A shell string a wrapper runs ends the chain and
/// is returned beside it.
pub(crate) fn chain(words: &Words) -> (Vec<Words>, Option<Runs>) {
    let mut out = vec![words.clone()];
    let mut script = None;
    let mut cur = words.clone();
    for _ in 0..16 {
        match inner(&cur) {
            Some(Runs::Words(next)) => {
                out.push(next.clone());
                cur = next;
            }
            Some(s @ Runs::Script { .. }) => {
                script = Some(s);
                break;
            }
            None => break,
        }
    }
    let execs: Vec<Words> = out.iter().flat_map(find_execs).collect();
    out.extend(execs);
    (out, script)
}

/// The commands `find … -exec CMD … ;` runs.
fn find_execs(words: &Words) -> Vec<Words> {
    let (ws, cs) = words;
    if ws.first().is_none_or(|w| program(w) != "find") {
        return Vec::new();
    }
    let mut out = Vec::new();
    let mut i = 1;
    while i < ws.len() {
        if matches!(ws[i].as_str(), "-exec" | "-execdir" | "-ok" | "-okdir") {
            let start = i + 1;
            let end = (start..ws.len())
                .find(|&k| ws[k] == ";" || ws[k] == "+")
                .unwrap_or(ws.len());
            if start < end {
                out.push((
                    ws[start..end].to_vec(),
                    cs.get(start..end).map(<[bool]>::to_vec).unwrap_or_default(),
                ));
            }
            i = end;
        }
        i += 1;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lit(s: &str) -> Words {
        let ws: Vec<String> = s.split_whitespace().map(str::to_string).collect();
        let n = ws.len();
        (ws, vec![false; n])
    }

    fn firsts(s: &str) -> Vec<String> {
        chain(&lit(s))
            .0
            .into_iter()
            .map(|(w, _)| w.join(" "))
            .collect()
    }

    #[test]
    fn options_with_values_and_operands_are_skipped() {
        assert_eq!(
            firsts("sudo -u root rm -rf /"),
            vec!["sudo -u root rm -rf /", "rm -rf /"]
        );
        assert_eq!(
            firsts("exec -a name rm x"),
            vec!["exec -a name rm x", "rm x"]
        );
        assert_eq!(
            firsts("timeout -s KILL 5 nice -n 10 rm x"),
            vec![
                "timeout -s KILL 5 nice -n 10 rm x",
                "nice -n 10 rm x",
                "rm x"
            ]
        );
        assert_eq!(
            firsts("flock /tmp/l rm x"),
            vec!["flock /tmp/l rm x", "rm x"]
        );
        assert_eq!(
            firsts("env -i A=1 /bin/rm x"),
            vec!["env -i A=1 /bin/rm x", "/bin/rm x"]
        );
        assert_eq!(
            firsts("/usr/bin/env -S rm\t-rf x"),
            vec!["/usr/bin/env -S rm -rf x", "rm -rf x"]
        );
        assert_eq!(
            firsts("find . -name x -exec rm -f {} ; -execdir mv {} y +"),
            vec![
                "find . -name x -exec rm -f {} ; -execdir mv {} y +",
                "rm -f {}",
                "mv {} y"
            ]
        );
        assert_eq!(firsts("busybox rm x"), vec!["busybox rm x", "rm x"]);
        assert_eq!(firsts("ls -l"), vec!["ls -l"]);
        assert_eq!(
            chain(&lit("watch -n 1 rm x")).1,
            Some(Runs::Script {
                text: "rm x".into(),
                computed: false
            })
        );
        assert_eq!(
            chain(&lit("flock -w 3 f -c date")).1,
            Some(Runs::Script {
                text: "date".into(),
                computed: false
            })
        );
    }
}
