//! `/provider [NAME]` on the agent side: the profiles of `config.toml` listed (the current one
//! marked), or the TUI's agent switched to one, the open session taking its model.

use super::effect::Intent;
use super::turns::TurnLink;
use crate::runtime::agent::{Op, OpOutcome, Sink, Target};

impl TurnLink {
    /// `/provider [NAME]`: lists the profiles (the current one marked), or makes the profile
    /// this TUI's agent and gives the open session its model (off the loop: the store).
    pub(super) fn switch_provider(
        &mut self,
        session: Option<String>,
        name: Option<&str>,
    ) -> Result<(), crate::tui::error::Failure> {
        let Some(a) = &self.agent else {
            return Err("no model provider is connected to the TUI".into());
        };
        let Some(name) = name else {
            let s = a.settings();
            let text = if s.profiles.is_empty() {
                format!(
                    "No [providers.NAME] profiles in {}: add one to switch with /provider NAME.",
                    s.path.display()
                )
            } else {
                let names: Vec<String> = s
                    .profiles
                    .iter()
                    .map(|p| {
                        if s.profile.as_deref() == Some(p.as_str()) {
                            format!("{p} (current)")
                        } else {
                            p.clone()
                        }
                    })
                    .collect();
                format!("Profiles: {}. /provider NAME switches.", names.join(", "))
            };
            return self.off_loop("neocode-provider", Intent::Provider, move |_| Ok(text));
        };
        // The profile's agent, checked here (no session named: nothing is written); the open
        // session takes its model off the loop.
        let OpOutcome::Provider { agent, model, .. } = a
            .submit(Target::New, Op::Provider(name.to_string()), Sink::none())
            .map_err(|e| e.to_string())?
        else {
            return Err("the agent answered another request".into());
        };
        // Same extensions: MCP servers are not started again.
        self.agent = Some(*agent);
        let name = name.to_string();
        self.off_loop("neocode-provider", Intent::Provider, move |agent| {
            let shown = crate::sanitize::line(&model).into_owned();
            match session {
                Some(id) => match agent.submit(
                    Target::Resume(id),
                    Op::SetModel(model.clone()),
                    Sink::none(),
                ) {
                    Ok(_) => Ok(format!(
                        "Profile {name}: this session uses {shown} from its next turn."
                    )),
                    Err(e) => Err(crate::tui::error::failed!("Cannot switch the profile: {e}")),
                },
                None => Ok(format!("Profile {name}: new sessions use {shown}.")),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime::agent::Agent;
    use crate::runtime::config::{Overrides, Settings};
    use crate::runtime::{Location, Sessions};
    use crate::tui::effect::Outcome;
    use crate::tui::effect::TurnEffect;
    use crate::tui::msg::Msg;

    #[test]
    fn provider_lists_the_profiles_marks_the_current_one_and_switches() {
        let dir = tempfile::tempdir().unwrap();
        let loc = Location::scratch(dir.path());
        std::fs::create_dir_all(&loc.home).unwrap();
        std::fs::write(
            loc.home.join("config.toml"),
            "[provider]\nbase_url = \"http://127.0.0.1:9/v1\"\nmodel = \"m\"\n\
             [providers.claude]\napi = \"anthropic\"\nmodel = \"claude-sonnet-4-5\"\n\
             api_key_command = \"echo k\"\n[providers.local]\nmodel = \"qwen\"\n",
        )
        .unwrap();
        let sessions = Sessions::open(&loc).unwrap();
        let flags = Overrides {
            provider: Some("local".into()),
            ..Overrides::default()
        };
        let settings = Settings::load_with(&loc.home, &flags, &|_| None).unwrap();
        let (tx, rx) = std::sync::mpsc::channel();
        let mut link = TurnLink::with_agent(tx, Agent::new(sessions, settings));
        let said = |rx: &std::sync::mpsc::Receiver<Msg>| match rx.recv().unwrap() {
            Msg::Outcome(Outcome { intent, result }) => {
                assert_eq!(intent, Intent::Provider);
                result
            }
            _ => panic!("not an outcome"),
        };
        let list = TurnEffect::Provider {
            session_id: None,
            name: None,
        };
        link.dispatch(&list).unwrap();
        assert_eq!(
            said(&rx),
            Ok("Profiles: claude, local (current). /provider NAME switches.".to_string())
        );
        let e = link
            .dispatch(&TurnEffect::Provider {
                session_id: None,
                name: Some("nope".into()),
            })
            .unwrap_err();
        assert!(e.as_str().contains("no provider profile `nope`"), "{e}");
        link.dispatch(&TurnEffect::Provider {
            session_id: None,
            name: Some("claude".into()),
        })
        .unwrap();
        assert_eq!(
            said(&rx),
            Ok("Profile claude: new sessions use anthropic:claude-sonnet-4-5.".to_string())
        );
        link.dispatch(&list).unwrap();
        assert_eq!(
            said(&rx),
            Ok("Profiles: claude (current), local. /provider NAME switches.".to_string())
        );
    }
}
