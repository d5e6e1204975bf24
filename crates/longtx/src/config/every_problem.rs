//! `config check` names every problem at once. [`Config::load`] stops at
//! the first (what `serve` needs); here each problem found is recorded with
//! where it was written, its setting is set aside, and the load is tried
//! again, so a file with five mistakes gets five lines.

use super::reference::{all_file_keys, nearest, SETTINGS};
use super::{file_error, Config, ConfigError, FileConfig};
use serde::Serialize;
use std::collections::BTreeSet;
use std::path::Path;

/// One problem met while loading, before the configuration exists.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Found {
    /// The environment variable, or the file's key.
    pub key: String,
    /// `environment` or the file's name.
    pub source: String,
    pub message: String,
}

/// More problems than this are not looked for: each costs a load.
const MAX_ROUNDS: usize = 60;

/// The configuration (without the settings found wrong), and every problem
/// found on the way. `None` when the file cannot be read or parsed at all.
pub fn load(
    path: Option<&Path>,
    env: &dyn Fn(&str) -> Option<String>,
) -> (Option<Config>, Vec<Found>) {
    let mut found = Vec::new();
    let name = path.map(|p| p.display().to_string()).unwrap_or_default();
    let mut table = match path {
        None => None,
        Some(path) => match std::fs::read_to_string(path) {
            Err(e) => {
                found.push(Found {
                    key: "config file".into(),
                    source: name,
                    message: format!("cannot be read: {e}"),
                });
                return (None, found);
            }
            Ok(text) => match text.parse::<toml::Table>() {
                Err(e) => {
                    found.push(Found {
                        key: "config file".into(),
                        source: name,
                        message: format!("is not TOML: {}", file_error(&text, &e)),
                    });
                    return (None, found);
                }
                Ok(table) => Some(table),
            },
        },
    };
    if let Some(table) = table.as_mut() {
        check_keys(table, &name, &mut found);
    }
    let mut masked: BTreeSet<String> = BTreeSet::new();
    for _ in 0..MAX_ROUNDS {
        let file: FileConfig = match table.clone().map(toml::Value::Table) {
            // Every key left passed its type check alone, so together too.
            Some(value) => value.try_into().unwrap_or_default(),
            None => FileConfig::default(),
        };
        let masked_env = |key: &str| if masked.contains(key) { None } else { env(key) };
        let error = match Config::from_file(file, &masked_env) {
            Ok(config) => return (Some(config), found),
            Err(error) => error,
        };
        let (key, message) = match &error {
            ConfigError::Value { key, message } => (key.to_string(), message.clone()),
            ConfigError::SecretFile { key, message } => (key.clone(), message.clone()),
            ConfigError::Read { .. } | ConfigError::File { .. } => {
                found.push(Found {
                    key: "config file".into(),
                    source: name,
                    message: error.to_string(),
                });
                return (None, found);
            }
        };
        // `webhook_token (config file)`: a file key, said as such.
        let (key, from_file) = match key.strip_suffix(" (config file)") {
            Some(file_key) => (file_key.to_owned(), true),
            None => (key, false),
        };
        let file_keys = file_keys_of(&key);
        let in_env = !from_file && masked_env(&key).is_some();
        let in_file = from_file
            || table
                .as_ref()
                .is_some_and(|t| file_keys.iter().any(|k| t.contains_key(*k)));
        // Written in the file: named by its file key, as the person wrote it.
        let written_in_file = !in_env && in_file;
        let shown_key = match file_keys.first() {
            Some(file_key) if written_in_file => file_key.to_string(),
            _ => key.clone(),
        };
        let message = message
            .strip_prefix(&format!("`{shown_key}` in the file: "))
            .map(str::to_owned)
            .unwrap_or(message);
        found.push(Found {
            key: shown_key,
            source: if written_in_file {
                name.clone()
            } else {
                "environment".into()
            },
            message,
        });
        // Set the setting aside, wherever it was written, and go on.
        let before = masked.len();
        masked.insert(key.clone());
        masked.insert(format!("{key}_FILE"));
        if let Some(base) = key.strip_suffix("_FILE") {
            masked.insert(base.to_owned());
        }
        let mut removed = false;
        if let Some(table) = table.as_mut() {
            for file_key in file_keys
                .iter()
                .copied()
                .chain(std::iter::once(key.as_str()))
            {
                removed |= table.remove(file_key).is_some();
            }
        }
        if masked.len() == before && !removed {
            // Nothing left to set aside: the same problem would come back.
            return (None, found);
        }
    }
    (None, found)
}

/// Unknown keys (with the key meant) and values of the wrong type, each
/// found alone and removed from `table`.
fn check_keys(table: &mut toml::Table, name: &str, found: &mut Vec<Found>) {
    let known: Vec<&str> = all_file_keys().collect();
    let keys: Vec<String> = table.keys().cloned().collect();
    for key in keys {
        let message = if !known.contains(&key.as_str()) {
            Some(match nearest(&key, known.iter().copied()) {
                Some(meant) => format!("unknown key; did you mean `{meant}`?"),
                None => "unknown key (`longtx config reference` lists the keys)".to_owned(),
            })
        } else {
            let mut alone = toml::Table::new();
            alone.insert(key.clone(), table[&key].clone());
            toml::Value::Table(alone)
                .try_into::<FileConfig>()
                .err()
                .map(|e| format!("{}; write it as the settings page shows", e.message()))
        };
        if let Some(message) = message {
            table.remove(&key);
            found.push(Found {
                key,
                source: name.to_owned(),
                message,
            });
        }
    }
}

/// The file keys of the setting whose environment variable is `env_name`.
fn file_keys_of(env_name: &str) -> Vec<&'static str> {
    SETTINGS
        .iter()
        .find(|s| s.env_names().any(|n| n == env_name))
        .map(|s| s.file_keys().collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn five_mistakes_in_a_file_are_five_problems() {
        let dir = longtx_testkit::TempDir::new("five");
        let path = dir.join("longtx.toml");
        std::fs::write(
            &path,
            "treshold_seconds = 50\nmax_running = \"three\"\npublic_url = \"longtx.internal:8080\"\nwebhook_token = \"  \"\ncooldown = \"7 days\"\n",
        )
        .unwrap();
        let (config, found) = load(Some(&path), &|_| None);
        let keys: Vec<&str> = found.iter().map(|f| f.key.as_str()).collect();
        assert!(keys.contains(&"treshold_seconds"), "{found:#?}");
        assert!(keys.contains(&"max_running"), "{found:#?}");
        assert!(keys.contains(&"webhook_token"), "{found:#?}");
        assert!(keys.contains(&"cooldown"), "{found:#?}");
        assert_eq!(found.len(), 4, "the URL is checked once loaded: {found:#?}");
        let config = config.expect("the rest loads");
        let later = super::super::check::problems(&config);
        assert!(
            later.iter().any(|p| p.key == "LONGTX_PUBLIC_URL"),
            "{later:?}"
        );
    }
}
