//! From an alerted table to its model: `versions` -> `Version` in
//! `app/models/version.rb`, honouring `self.table_name`, namespaced models
//! and custom inflections.

use super::{ClassIndex, ModelRef};

pub(super) fn model_of(index: &ClassIndex, table: &str) -> Option<ModelRef> {
    let table = table.rsplit('.').next().unwrap_or(table);
    let (class, explicit) = match index.table_names.get(table) {
        Some(class) => (class.clone(), true),
        None => {
            // `event_applications` is `EventApplication`, or `Event::Application`
            // (a namespaced model with the module's table prefix).
            let single = singularize(table);
            let parts: Vec<&str> = single.split('_').collect();
            let namespaced = (1..parts.len()).map(|cut| {
                format!(
                    "{}::{}",
                    camelize(&parts[..cut].join("_")),
                    camelize(&parts[cut..].join("_"))
                )
            });
            let is_model = |name: &String| {
                index
                    .classes
                    .get(name)
                    .is_some_and(|(p, _)| super::is_model_path(p))
            };
            let class = std::iter::once(camelize(&single))
                .chain(namespaced)
                .find(is_model)
                .or_else(|| {
                    // Custom inflections (`OIDC::TrustedPublisher::GitHubAction`
                    // for `oidc_trusted_publisher_github_actions`): the same
                    // letters, whatever the case and the `::`s.
                    let squashed = single.replace('_', "");
                    let mut models: Vec<&String> = index
                        .classes
                        .keys()
                        .filter(|name| {
                            name.replace("::", "").to_lowercase() == squashed && is_model(name)
                        })
                        .collect();
                    models.sort();
                    models.first().map(|name| (*name).clone())
                })?;
            (class, false)
        }
    };
    let (path, line) = index.classes.get(&class)?.clone();
    (explicit || super::is_model_path(&path)).then(|| ModelRef {
        table: table.to_owned(),
        class,
        path,
        line,
        explicit_table_name: explicit,
    })
}

/// `self.table_name = "legacy_versions"` (or a symbol).
pub(super) fn explicit_table_name(text: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let rest = line.trim().strip_prefix("self.table_name")?.trim_start();
        let value = rest.strip_prefix('=')?.trim();
        let name: String = value
            .trim_start_matches([':', '"', '\''])
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '.')
            .collect();
        (!name.is_empty()).then(|| name.rsplit('.').next().unwrap_or(&name).to_owned())
    })
}

/// English plurals as Rails' default inflections have them, for table and
/// association names.
pub fn singularize(table: &str) -> String {
    let (head, last) = match table.rsplit_once('_') {
        Some((head, last)) => (format!("{head}_"), last),
        None => (String::new(), table),
    };
    let irregular = [
        ("people", "person"),
        ("men", "man"),
        ("children", "child"),
        ("data", "datum"),
    ];
    let single = if let Some((_, s)) = irregular.iter().find(|(p, _)| *p == last) {
        (*s).to_owned()
    } else if let Some(stem) = last
        .strip_suffix("uses")
        .or_else(|| last.strip_suffix("iases"))
    {
        // statuses, buses; aliases
        if last.ends_with("iases") {
            format!("{stem}ias")
        } else {
            format!("{stem}us")
        }
    } else if let Some(stem) = last.strip_suffix("ies") {
        format!("{stem}y")
    } else if let Some(stem) = ["sses", "shes", "ches", "xes", "zzes"]
        .iter()
        .find_map(|suffix| last.strip_suffix(suffix).map(|s| (s, suffix)))
    {
        format!("{}{}", stem.0, &stem.1[..stem.1.len() - 2])
    } else if last.ends_with("ss") || last.ends_with("us") {
        last.to_owned()
    } else if let Some(stem) = last.strip_suffix('s') {
        stem.to_owned()
    } else {
        last.to_owned()
    };
    format!("{head}{single}")
}

/// `order_items` -> `OrderItems`: a file or table name as a constant.
pub fn camelize(name: &str) -> String {
    name.split('_')
        .map(|part| {
            let mut chars = part.chars();
            match chars.next() {
                Some(first) => first.to_uppercase().chain(chars).collect(),
                None => String::new(),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_become_model_names_as_rails_inflects_them() {
        for (table, class) in [
            ("versions", "Version"),
            ("order_items", "OrderItem"),
            ("categories", "Category"),
            ("addresses", "Address"),
            ("boxes", "Box"),
            ("people", "Person"),
            ("statuses", "Status"),
        ] {
            assert_eq!(camelize(&singularize(table)), class, "{table}");
        }
    }
}
