//! Tests of loading and resolving the settings.

use super::*;
use crate::runtime::tools::SandboxMode;

fn env_of(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
    let v: Vec<(String, String)> = pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
    move |k| v.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone())
}

/// A home whose `config.toml` is `text`.
fn home_with(text: &str) -> tempfile::TempDir {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), text).unwrap();
    home
}

/// The settings of `home` under `env`, without flags.
fn load(home: &tempfile::TempDir, env: &dyn Fn(&str) -> Option<String>) -> Settings {
    Settings::load_with(home.path(), &Overrides::default(), env).unwrap()
}

#[test]
fn openai_without_a_provider_is_the_missing_error_in_words() {
    let home = tempfile::tempdir().unwrap();
    let s = load(&home, &env_of(&[]));
    let ProviderStatus::Missing(why) = s.provider_status() else {
        panic!("a provider is configured");
    };
    let e = s.openai().unwrap_err();
    assert_eq!(e, ConfigError::Missing(why.clone()));
    assert_eq!(e.to_string(), why);
    assert!(why.starts_with("no model provider configured"), "{why}");
}

#[test]
fn first_use_writes_a_commented_default_and_says_what_to_set() {
    let home = tempfile::tempdir().unwrap();
    let s = load(&home, &env_of(&[]));
    let text = std::fs::read_to_string(home.path().join("config.toml")).unwrap();
    assert_eq!(text, DEFAULT_CONFIG);
    match s.provider_status() {
        ProviderStatus::Missing(m) => {
            assert!(
                m.contains("NEOCODE_BASE_URL") && m.contains("NEOCODE_MODEL"),
                "{m}"
            )
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(s.approval, ApprovalPolicy::Ask);
    assert_eq!(s.sandbox.mode, SandboxMode::WorkspaceWrite);
}

#[test]
fn env_overrides_file_and_flags_override_env() {
    let home = home_with(
        "[provider]\nbase_url = \"http://file/v1\"\nmodel = \"file-model\"\n[limits]\nmax_turns = 7\n",
    );
    let env = env_of(&[("NEOCODE_MODEL", "env-model"), ("OPENAI_API_KEY", "sk-x")]);
    let s = load(&home, &env);
    assert_eq!(
        s.provider_status(),
        ProviderStatus::Ready {
            base_url: "http://file/v1".into(),
            model: "env-model".into()
        }
    );
    assert_eq!(s.limits.max_turns, Some(7));
    assert_eq!(s.key_source().as_deref(), Some("OPENAI_API_KEY"));
    let flags = Overrides {
        model: Some("flag-model".into()),
        base_url: Some("http://flag/v1/".into()),
        approval: Some(ApprovalPolicy::NeverAsk),
        api: None,
        provider: None,
    };
    let s = Settings::load_with(home.path(), &flags, &env).unwrap();
    let o = s.openai().unwrap();
    assert_eq!(o.base_url, "http://flag/v1");
    assert_eq!(o.model, "flag-model");
    assert_eq!(s.approval, ApprovalPolicy::NeverAsk);
    assert!(!format!("{s:?}").contains("sk-x"));
}

#[test]
fn key_alone_means_openai_but_model_is_still_required() {
    let home = tempfile::tempdir().unwrap();
    let env = env_of(&[("NEOCODE_API_KEY", "k")]);
    let s = load(&home, &env);
    match s.provider_status() {
        ProviderStatus::Missing(m) => assert!(m.starts_with("no model configured"), "{m}"),
        other => panic!("{other:?}"),
    }
}

#[test]
fn the_api_picks_its_key_variable_and_base_url() {
    let home = tempfile::tempdir().unwrap();
    let env = env_of(&[
        ("NEOCODE_API", "anthropic"),
        ("ANTHROPIC_API_KEY", "ant-k"),
        ("OPENAI_API_KEY", "oa-k"),
        ("NEOCODE_MODEL", "claude-sonnet-4-5"),
    ]);
    let s = load(&home, &env);
    assert_eq!(s.api, Api::Anthropic);
    assert_eq!(s.key_source().as_deref(), Some("ANTHROPIC_API_KEY"));
    let w = s.wire().unwrap();
    assert_eq!(w.http.base_url, "https://api.anthropic.com/v1");
    assert_eq!(w.http.api_key.as_deref(), Some("ant-k"));
    // The flag wins over the environment.
    let flags = Overrides {
        api: Some(Api::Responses),
        ..Overrides::default()
    };
    let s = Settings::load_with(home.path(), &flags, &env).unwrap();
    assert_eq!(s.api, Api::Responses);
    assert_eq!(s.wire().unwrap().http.base_url, "https://api.openai.com/v1");
    assert_eq!(s.wire().unwrap().http.api_key.as_deref(), Some("oa-k"));
    // Without a key, api.anthropic.com is not assumed.
    let env = env_of(&[("NEOCODE_API", "anthropic"), ("NEOCODE_MODEL", "m")]);
    let s = load(&home, &env);
    assert!(matches!(s.provider_status(), ProviderStatus::Missing(_)));
}

#[test]
fn a_profile_overlays_provider_and_an_unknown_one_is_named() {
    let home = home_with(
        "[provider]\nmodel = \"local\"\nbase_url = \"http://localhost:8080/v1\"\nmax_retries = 1\n\
         [providers.claude]\napi = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\nbase_url = \"https://api.anthropic.com/v1\"\n",
    );
    let env = env_of(&[("NEOCODE_PROVIDER", "claude"), ("ANTHROPIC_API_KEY", "k")]);
    let s = load(&home, &env);
    assert_eq!(s.api, Api::Anthropic);
    assert_eq!(s.profile.as_deref(), Some("claude"));
    assert_eq!(s.model.as_deref(), Some("claude-sonnet-4-5"));
    assert_eq!(
        s.max_retries, 1,
        "keys the profile leaves out come from [provider]"
    );
    let flags = Overrides {
        provider: Some("gpt".into()),
        ..Overrides::default()
    };
    let e = Settings::load_with(home.path(), &flags, &env)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("no provider profile `gpt` (profiles: claude)"),
        "{e}"
    );
    // Without a choice, [provider] alone applies.
    let s = load(&home, &env_of(&[]));
    assert_eq!((s.api, s.model.as_deref()), (Api::Chat, Some("local")));
}

#[test]
fn a_model_may_name_its_api() {
    assert_eq!(
        Api::split_model("anthropic:claude-sonnet-4-5"),
        (Some(Api::Anthropic), "claude-sonnet-4-5")
    );
    assert_eq!(
        Api::split_model("qwen2.5-coder:7b"),
        (None, "qwen2.5-coder:7b")
    );
    assert_eq!(Api::split_model("gpt-5"), (None, "gpt-5"));
    let home = tempfile::tempdir().unwrap();
    let env = env_of(&[
        ("NEOCODE_MODEL", "responses:gpt-5"),
        ("OPENAI_API_KEY", "k"),
    ]);
    let s = load(&home, &env);
    assert_eq!((s.api, s.model.as_deref()), (Api::Responses, Some("gpt-5")));
}

#[test]
fn api_key_env_names_the_variable_and_a_bad_api_is_named() {
    let home =
        home_with("[provider]\napi = \"responses\"\napi_key_env = \"MY_KEY\"\nmodel = \"gpt-5\"\n");
    let env = env_of(&[("MY_KEY", "mine"), ("OPENAI_API_KEY", "not-this")]);
    let s = load(&home, &env);
    assert_eq!(s.wire().unwrap().http.api_key.as_deref(), Some("mine"));
    assert_eq!(s.key_source().as_deref(), Some("MY_KEY"));
    let env = env_of(&[("NEOCODE_API", "gemini")]);
    let e = Settings::load_with(home.path(), &Overrides::default(), &env)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("`gemini` is not one of chat, responses, anthropic"),
        "{e}"
    );
}

#[test]
fn bad_file_is_one_clear_error() {
    let home = tempfile::tempdir().unwrap();
    std::fs::write(home.path().join("config.toml"), "[provider]\nmodle = 1\n").unwrap();
    let e = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("config.toml") && e.contains("modle"), "{e}");
    std::fs::write(
        home.path().join("config.toml"),
        "[approval]\npolicy = \"maybe\"\n",
    )
    .unwrap();
    let e = Settings::load_with(home.path(), &Overrides::default(), &env_of(&[]))
        .unwrap_err()
        .to_string();
    assert!(e.contains("maybe"), "{e}");
}

/// Issue 35: with the README's `NEOCODE_BASE_URL` / `NEOCODE_MODEL` set, `/provider err` said
/// it switched while requests still went to the environment's server. A profile chosen
/// explicitly (`--provider`, `/provider`, a session's stored one) wins over them; its own key
/// source wins over `NEOCODE_API_KEY` (another server's key); flags still win over it.
#[test]
fn an_explicit_profile_wins_over_the_environment() {
    let home = home_with(
        "[providers.err]\nbase_url = \"http://127.0.0.1:9999/v1\"\nmodel = \"err-model\"\n\
         api_key_env = \"ERR_KEY\"\n[providers.bare]\nmax_retries = 7\n",
    );
    let env = env_of(&[
        ("NEOCODE_BASE_URL", "http://127.0.0.1:1111/v1"),
        ("NEOCODE_MODEL", "env-model"),
        ("NEOCODE_API_KEY", "env-key"),
        ("ERR_KEY", "err-key"),
    ]);
    let chosen = |name: &str| Overrides {
        provider: Some(name.into()),
        ..Overrides::default()
    };
    let s = Settings::load_with(home.path(), &chosen("err"), &env).unwrap();
    assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:9999/v1"));
    assert_eq!(s.model.as_deref(), Some("err-model"));
    assert_eq!(s.api_key(), Some("err-key"));
    // Keys the profile leaves out still come from the environment.
    let s = Settings::load_with(home.path(), &chosen("bare"), &env).unwrap();
    assert_eq!(s.base_url.as_deref(), Some("http://127.0.0.1:1111/v1"));
    assert_eq!(s.model.as_deref(), Some("env-model"));
    assert_eq!(s.api_key(), Some("env-key"));
    assert_eq!(s.max_retries, 7);
    // Flags win over the profile; without a choice the environment applies as before.
    let flags = Overrides {
        model: Some("flag-model".into()),
        ..chosen("err")
    };
    let s = Settings::load_with(home.path(), &flags, &env).unwrap();
    assert_eq!(s.model.as_deref(), Some("flag-model"));
    let s = load(&home, &env);
    assert_eq!(s.model.as_deref(), Some("env-model"));
}
