//! The settings an installed server entry carries: the database named by `--db` / `CORTEX_DB`
//! and every other `CORTEX_*` setting in force that changes what `cortex serve` does. An agent
//! may start its servers with a cleared environment (Codex does), or from another folder, so
//! the entry spells them out, with relative paths made absolute.

use cortex_service::settings;
use std::path::Path;

/// Settings that describe where a request comes from, not the server: the scope is inferred
/// per project, so pinning one in a user-wide entry would file every project's memory under
/// it. And the HTTP ones would turn the stdio server into an HTTP one.
fn carried(name: &str) -> bool {
    let http = name.strip_prefix("CORTEX_").is_some_and(|rest| rest.starts_with("HTTP_"));
    !matches!(name, "CORTEX_ORG" | "CORTEX_PROJECT" | "CORTEX_BRANCH") && !http
}

/// Settings holding a path, resolved against the folder `cortex install` ran in.
const PATHS: [&str; 2] = ["CORTEX_MODEL_DIR", "CORTEX_LEXICAL_INDEX"];

/// `(name, value)` for each setting to write, in the declared order. `db` is the `--db` value
/// (clap fills it from `CORTEX_DB` too); `env` reads the environment.
pub fn server_env(
    db: Option<&str>,
    env: impl Fn(&str) -> Option<String>,
    here: &Path,
) -> Vec<(String, String)> {
    cortex_server::settings::all()
        .filter(|s| carried(s.name()))
        .filter_map(|s| {
            let value = if s.name() == "CORTEX_DB" { db.map(str::to_string) } else { env(s.name()) };
            let value = value.filter(|v| !v.trim().is_empty())?;
            let value = match s.name() {
                "CORTEX_DB" => absolute_db(&value, here),
                name if PATHS.contains(&name) => absolute(&value, here),
                _ => value,
            };
            Some((s.name().to_string(), value))
        })
        .collect()
}

/// Names of variables the entry must let through without writing their value: the embedding
/// server's API key, which belongs in the environment, not in a config file.
pub fn passed_through(env: impl Fn(&str) -> Option<String>) -> Vec<String> {
    // `main` checked both already; a value they refuse carries nothing.
    match settings::EMBEDDER.get(&env) {
        Ok(settings::EmbedderKind::OpenAi) => settings::OPENAI_API_KEY_ENV.get(&env).into_iter().collect(),
        _ => Vec::new(),
    }
}

/// A SQLite path (bare or `sqlite:`) made absolute; a URL as it is.
fn absolute_db(value: &str, here: &Path) -> String {
    if value.contains("://") {
        return value.to_string();
    }
    match value.strip_prefix("sqlite:") {
        Some(path) => format!("sqlite:{}", absolute(path, here)),
        None => absolute(value, here),
    }
}

fn absolute(value: &str, here: &Path) -> String {
    let path = Path::new(value);
    if path.is_absolute() { value.to_string() } else { here.join(path).to_string_lossy().into_owned() }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_and_server_settings_are_carried_and_paths_made_absolute() {
        let env = |k: &str| match k {
            "CORTEX_EMBEDDER" => Some("none".to_string()),
            "CORTEX_MODEL_DIR" => Some("models/minilm".to_string()),
            "CORTEX_PROJECT" => Some("api".to_string()),
            "CORTEX_HTTP_ADDR" => Some("127.0.0.1:7777".to_string()),
            "CORTEX_LOG" => Some("  ".to_string()),
            _ => None,
        };
        let here = Path::new("/home/ada/project");
        let got = server_env(Some("team.db"), env, here);
        assert_eq!(
            got,
            [
                ("CORTEX_DB".to_string(), "/home/ada/project/team.db".to_string()),
                ("CORTEX_EMBEDDER".to_string(), "none".to_string()),
                ("CORTEX_MODEL_DIR".to_string(), "/home/ada/project/models/minilm".to_string()),
            ]
        );
        let url = "postgres://cortex@db/memory";
        assert_eq!(server_env(Some(url), |_| None, here), [("CORTEX_DB".to_string(), url.to_string())]);
        assert_eq!(server_env(Some("sqlite:m.db"), |_| None, here)[0].1, "sqlite:/home/ada/project/m.db");
        assert!(server_env(None, |_| None, here).is_empty(), "nothing set, nothing written");
    }

    #[test]
    fn the_embedding_api_key_is_passed_through_by_name_only() {
        assert!(passed_through(|_| None).is_empty());
        let openai = |k: &str| (k == "CORTEX_EMBEDDER").then(|| "openai".to_string());
        assert_eq!(passed_through(openai), ["OPENAI_API_KEY"]);
        let named = |k: &str| match k {
            "CORTEX_EMBEDDER" => Some("openai".to_string()),
            "CORTEX_OPENAI_API_KEY_ENV" => Some("EMBED_KEY".to_string()),
            _ => None,
        };
        assert_eq!(passed_through(named), ["EMBED_KEY"]);
    }
}
