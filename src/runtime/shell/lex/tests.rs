use super::*;

fn prep(s: &str) -> Prepared {
    prepare(s).unwrap_or_else(|e| panic!("{s:?}: {e}"))
}

#[test]
fn every_here_doc_form_is_cut_out() {
    let p = prep("cat <<EOF | grep x\n$(whoami)\nEOF\nrm y\n");
    assert_eq!(p.text, "cat <__neocode_heredoc_0__ | grep x\nrm y\n");
    assert_eq!(p.docs[0].body, "$(whoami)\n");
    assert!(p.docs[0].expands);
    // `<<-`: tabs stripped from the body and the delimiter line.
    let p = prep("cat <<-EOF\n\t$(rm x)\n\tEOF\nls\n");
    assert_eq!(p.text, "cat <__neocode_heredoc_0__\nls\n");
    assert_eq!(p.docs[0].body, "$(rm x)\n");
    // Quoted delimiters (whole or in part) do not expand.
    for q in ["'EOF'", "\"EOF\"", "E\"OF\"", "\\EOF"] {
        let p = prep(&format!("cat <<{q}\n$(rm x)\nEOF\nls"));
        assert_eq!(p.text, "cat <__neocode_heredoc_0__\nls", "{q}");
        assert!(!p.docs[0].expands, "{q}");
    }
    // Two on one line: bodies one after the other.
    let p = prep("cat <<A <<B\na\nA\nrm x\nB\nrm y");
    assert_eq!(
        p.text,
        "cat <__neocode_heredoc_0__ <__neocode_heredoc_1__\nrm y"
    );
    assert_eq!(p.docs[0].body, "a\n");
    assert_eq!(p.docs[1].body, "rm x\n");
    let p = prep("cat <<A; cat <<B\nA\nB\nrm x");
    assert_eq!(
        p.text,
        "cat <__neocode_heredoc_0__; cat <__neocode_heredoc_1__\nrm x"
    );
    // `\`-newline joins lines in an unquoted body before the delimiter is looked for.
    let p = prep("cat <<EOF\nfoo\\\nEOF\nEOF\nrm x");
    assert_eq!(p.text, "cat <__neocode_heredoc_0__\nrm x");
    assert_eq!(p.docs[0].body, "fooEOF\n");
    // A here-doc inside a substitution; `)` in its body does not close it.
    let p = prep("echo \"$(cat <<EOF\n)\nEOF\n)\" done");
    assert_eq!(p.text, "echo \"$(cat <__neocode_heredoc_0__\n)\" done");
    // Arithmetic shifts are not here-docs.
    assert!(prep("echo $((1<<3))").docs.is_empty());
    assert_eq!(
        prep("cat <<EOF\nx").restore("cat <__neocode_heredoc_0__"),
        "cat <<EOF"
    );
}

#[test]
fn substitutions_of_bodies_include_backticks() {
    let subs = body_substitutions(
        "it's $(rm x) \"q\" `curl y` ${x:-$(wget z)} \\$(no) $((1+$(id))) \\`not\\`",
    );
    assert_eq!(
        subs,
        Ok(vec![
            "rm x".to_string(),
            "curl y".to_string(),
            "wget z".to_string(),
            "id".to_string(),
        ])
    );
    assert_eq!(
        body_substitutions("$(unclosed"),
        Err(LexError::Unterminated)
    );
    assert_eq!(prepare("cat <<\nx"), Err(LexError::NoDelimiter));
}

#[test]
fn syntax_sh_reads_otherwise_is_found_outside_quotes_only() {
    let b = |s: &str| bashisms(s);
    assert_eq!(b("cargo test &>/dev/null rm x"), vec![Bashism::AmpRedirect]);
    assert_eq!(
        b("cargo test 2&>/dev/null rm x"),
        vec![Bashism::AmpRedirect]
    );
    assert_eq!(b("ls >&out"), vec![Bashism::DupToFile]);
    assert_eq!(b("cat <<-EOF\n\tx\n\tEOF"), vec![Bashism::HeredocDash]);
    assert_eq!(b("a |& b"), vec![Bashism::PipeBoth]);
    assert_eq!(b("diff <(ls) x"), vec![Bashism::ProcessSubstitution]);
    assert_eq!(b("echo $'\\x41'"), vec![Bashism::DollarQuote]);
    assert_eq!(b("git {push,x}"), vec![Bashism::BraceExpansion]);
    assert_eq!(b("[[ -f x ]] && ls"), vec![Bashism::Keyword]);
    for fine in [
        "ls 2>&1 >&2 3>&- 4>&1-",
        "echo '&>' \"|&\" '{a,b}'",
        "find . -exec rm {} +",
        "{ ls; }",
        "echo $((1<<2)) $(ls)",
        "cat <<EOF\n&> {a,b}\nEOF",
    ] {
        assert_eq!(b(fine), vec![], "{fine}");
    }
}
