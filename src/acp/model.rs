//! The model as a session config option (`session/set_config_option`, id `model`): the
//! configured model and each `[providers.NAME]` profile's, as `/model` and `/provider` switch
//! them in the TUI; the choice is stored in the session's header, so it holds everywhere.

use agent_client_protocol::v1::schema::{
    SessionConfigOption, SessionConfigOptionCategory, SessionConfigSelectOption,
    SetSessionConfigOptionRequest,
};

use super::error::AcpError;
use super::hub::{Hub, OpenSession};
use crate::runtime::agent::{Agent, session_model};
use crate::runtime::config::Api;

/// The config option's id.
pub(crate) const MODEL: &str = "model";

/// One choice: its value id, what it shows, the profile it runs on, the model.
struct Choice {
    value: String,
    name: String,
    profile: Option<String>,
    model: String,
}

/// The configured model (`default`) and each profile's (`provider:NAME`).
fn choices(agent: &Agent) -> Vec<Choice> {
    let mut out = Vec::new();
    if let Some(m) = agent.api_model() {
        out.push(Choice {
            value: "default".into(),
            name: m.clone(),
            profile: agent.settings().profile.clone(),
            model: m,
        });
    }
    for p in &agent.settings().profiles {
        if let Some(m) = agent.with_profile(p).ok().and_then(|a| a.api_model()) {
            out.push(Choice {
                value: format!("provider:{p}"),
                name: format!("{m} ({p})"),
                profile: Some(p.clone()),
                model: m,
            });
        }
    }
    out
}

fn same_model(a: &str, b: &str) -> bool {
    Api::split_model(a).1 == Api::split_model(b).1
}

/// The session's choice: the one its header's profile and model name, else its own model
/// (set elsewhere, e.g. `/model` in the TUI) as one more choice, else `default`.
fn current(open: &OpenSession, id: &str, choices: &mut Vec<Choice>) -> String {
    let Ok(h) = open.sessions.header(id) else {
        return "default".into();
    };
    let model = session_model(&h);
    let found = choices.iter().find(|c| {
        (h.profile.is_none() || c.profile == h.profile)
            && model.is_none_or(|m| same_model(m, &c.model))
    });
    match (found, model) {
        (Some(c), _) => c.value.clone(),
        (None, Some(m)) => {
            let value = format!("model:{m}");
            choices.push(Choice {
                value: value.clone(),
                name: m.to_string(),
                profile: h.profile.clone(),
                model: m.to_string(),
            });
            value
        }
        (None, None) => "default".into(),
    }
}

/// The session's config options: the model selector (none when no model is configured).
pub(crate) fn options(open: &OpenSession, id: &str) -> Vec<SessionConfigOption> {
    let mut list = choices(&open.agent);
    if list.is_empty() {
        return Vec::new();
    }
    let now = current(open, id, &mut list);
    let select: Vec<SessionConfigSelectOption> = list
        .into_iter()
        .map(|c| {
            SessionConfigSelectOption::new(c.value, crate::sanitize::line(&c.name).into_owned())
        })
        .collect();
    vec![
        SessionConfigOption::select(MODEL, "Model", now, select)
            .category(SessionConfigOptionCategory::Model)
            .description("The model of the session's next requests (as /model)".to_string()),
    ]
}

/// `session/set_config_option` for `model`: stored as the session's model (and profile)
/// from its next request on; refused while a prompt runs.
pub(crate) fn set(
    hub: &Hub,
    req: &SetSessionConfigOptionRequest,
) -> Result<Vec<SessionConfigOption>, AcpError> {
    let id = req.session_id.to_string();
    let open = hub.session(&id)?;
    if req.config_id.0.as_ref() != MODEL {
        return Err(AcpError::UnknownConfig(req.config_id.0.to_string()));
    }
    if hub.is_running(&id) {
        return Err(AcpError::Busy(id));
    }
    let value = req
        .value
        .as_value_id()
        .map(|v| v.0.to_string())
        .unwrap_or_default();
    let mut list = choices(&open.agent);
    current(&open, &id, &mut list);
    let choice = list
        .into_iter()
        .find(|c| c.value == value)
        .ok_or_else(|| AcpError::UnknownModel(value.clone()))?;
    let agent = match &choice.profile {
        Some(p) if open.agent.settings().profile.as_ref() != Some(p) => {
            open.agent.with_profile(p)?
        }
        _ => open.agent.clone(),
    };
    // The header is changed under the session's lease: handed over for the change.
    hub.release_for_turn(&id);
    let set = agent.set_model(&id, &choice.model);
    hub.retake(&id)?;
    set.map_err(|e| AcpError::Turn(e.to_string()))?;
    Ok(options(&open, &id))
}
