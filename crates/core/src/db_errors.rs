//! Connection errors people can act on: when a database refuses a plain
//! connection, or a TLS certificate does not verify, the driver's text says
//! so only in its own words. These rules add which URL setting to change.
//! The driver's message is kept, and never the URL (it may hold a password).

/// Which kind of URL the setting names belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Flavour {
    /// `postgres://...?sslmode=...&sslrootcert=...`
    Postgres,
    /// `mysql://...?ssl-mode=...&ssl-ca=...` (MySQL, Aurora, MariaDB)
    MySql,
}

/// True when the URL turns TLS off (`sslmode=disable`, `ssl-mode=DISABLED`).
pub fn tls_disabled(url: &str) -> bool {
    let query = url.split_once('?').map(|(_, q)| q).unwrap_or("");
    query.split('&').any(|pair| {
        let pair = pair.to_ascii_lowercase();
        pair == "sslmode=disable" || pair == "ssl-mode=disabled"
    })
}

/// `message` with a sentence that names the setting to change, when the
/// error is one of TLS; `None` otherwise. `tls_off`: the URL turned TLS
/// off ([`tls_disabled`]).
pub fn tls_hint(flavour: Flavour, message: &str, tls_off: bool) -> Option<String> {
    let lower = message.to_ascii_lowercase();
    // MariaDB 10.11 with require_secure_transport=ON answers a plain
    // connection "1045 Access denied", not MySQL's 3159 (seen here).
    if tls_off && flavour == Flavour::MySql && lower.contains("access denied") {
        return Some(format!(
            "{message}: the URL turns TLS off (ssl-mode=DISABLED), and MariaDB answers this way \
             when it requires TLS (require_secure_transport=ON); use \
             ssl-mode=VERIFY_IDENTITY&ssl-ca=/path/to/ca.pem"
        ));
    }
    let refused_plain = [
        // PostgreSQL's pg_hba.conf `hostnossl ... reject` or RDS force_ssl.
        "no encryption",
        "ssl off",
        "ssl is required",
        "sslmode=require",
        // MySQL and MariaDB with require_secure_transport=ON (error 3159).
        "insecure transport",
        "require_secure_transport",
    ]
    .iter()
    .any(|needle| lower.contains(needle));
    let (mode, ca, strict) = match flavour {
        Flavour::Postgres => (
            "sslmode",
            "sslrootcert",
            "sslmode=verify-full&sslrootcert=/path/to/ca.pem",
        ),
        Flavour::MySql => (
            "ssl-mode",
            "ssl-ca",
            "ssl-mode=VERIFY_IDENTITY&ssl-ca=/path/to/ca.pem",
        ),
    };
    if refused_plain {
        return Some(format!(
            "{message}: the server requires TLS; remove {mode}=disable from the URL, or better ask \
             for a verified connection: {strict}"
        ));
    }
    let bad_certificate = [
        "unknownissuer",
        "unknown issuer",
        "invalid peer certificate",
        "certificate verify failed",
        "notvalidforname",
        "not valid for name",
        "invalidcertificate",
    ]
    .iter()
    .any(|needle| lower.contains(needle));
    if bad_certificate {
        return Some(format!(
            "{message}: the server's TLS certificate did not verify; set {ca} to the CA bundle that \
             signed it (for RDS and Aurora, Amazon's global bundle) and connect by the name the \
             certificate carries"
        ));
    }
    let unreadable_ca =
        lower.contains("root cert") || lower.contains("ssl-ca") || lower.contains("sslrootcert");
    unreadable_ca.then(|| format!("{message}: check that {ca} names a readable PEM file"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_plain_connection_names_the_mode_setting() {
        let pg = tls_hint(
            Flavour::Postgres,
            "error returned from database: no pg_hba.conf entry for host \"127.0.0.1\", user \"x\", database \"y\", no encryption",
            true,
        )
        .unwrap();
        assert!(
            pg.contains("requires TLS") && pg.contains("sslmode=verify-full"),
            "{pg}"
        );
        let my = tls_hint(
            Flavour::MySql,
            "error returned from database: 3159 (HY000): Connections using insecure transport are prohibited while --require_secure_transport=ON.",
            false,
        )
        .unwrap();
        assert!(my.contains("ssl-mode=VERIFY_IDENTITY"), "{my}");
        let denied = "1045 (28000): Access denied for user 'c'@'127.0.0.1' (using password: YES)";
        assert!(tls_hint(Flavour::MySql, denied, true)
            .unwrap()
            .contains("require_secure_transport"));
        assert_eq!(
            tls_hint(Flavour::MySql, denied, false),
            None,
            "a wrong password stays a wrong password"
        );
        assert!(tls_disabled("mysql://u@h/db?ssl-mode=DISABLED"));
        assert!(tls_disabled(
            "postgres://u@h/db?application_name=x&sslmode=disable"
        ));
        assert!(!tls_disabled("postgres://u@h/db?sslmode=verify-full"));
    }

    #[test]
    fn a_certificate_that_does_not_verify_names_the_ca_setting() {
        let hint = tls_hint(
            Flavour::Postgres,
            "error occurred while attempting to establish a TLS connection: invalid peer certificate: UnknownIssuer",
            false,
        )
        .unwrap();
        assert!(
            hint.contains("sslrootcert") && hint.contains("did not verify"),
            "{hint}"
        );
        assert!(tls_hint(
            Flavour::MySql,
            "invalid peer certificate: UnknownIssuer",
            false
        )
        .unwrap()
        .contains("ssl-ca"));
        assert_eq!(
            tls_hint(Flavour::Postgres, "password authentication failed", false),
            None
        );
    }
}
