//! What makes a transaction long, as it reads in Ruby: network calls, mail,
//! job enqueues, search indexing, external processes, batch writes and
//! loops of writes. Used to rank transaction sites by how likely the slow
//! work runs inside them; the catalogue still chooses the fix.

/// (needle, what it is, weight). A needle starting with `*` may end an
/// identifier (`*Mailer.` matches `OrderMailer.`); one ending with `*` may
/// start one (`enqueue*` matches `enqueue_ids`).
const SLOW: &[(&str, &str, u32)] = &[
    ("Net::HTTP", "an HTTP call", 6),
    ("Faraday", "an HTTP call", 6),
    ("HTTParty", "an HTTP call", 6),
    ("RestClient", "an HTTP call", 6),
    ("Excon", "an HTTP call", 6),
    ("Typhoeus", "an HTTP call", 6),
    ("URI.open", "an HTTP call", 6),
    ("open-uri", "an HTTP call", 6),
    (".post(", "an HTTP call", 4),
    (".get(", "an HTTP call", 3),
    ("Stripe::", "a payment API call", 6),
    ("Braintree::", "a payment API call", 6),
    ("ActiveMerchant", "a payment API call", 6),
    ("PayPal", "a payment API call", 6),
    ("Adyen", "a payment API call", 6),
    ("Plaid", "a bank API call", 6),
    (".purchase(", "a payment gateway call", 5),
    ("Google::Cloud", "a cloud API call", 6),
    ("Fog::", "a cloud API call", 5),
    ("Net::SMTP", "a mail delivery", 6),
    ("Net::SFTP", "a file transfer", 6),
    ("Net::SSH", "an external process", 6),
    ("Gibbon", "a Mailchimp API call", 6),
    ("SendGrid", "a mail API call", 6),
    ("Postmark", "a mail API call", 6),
    ("Mixpanel", "an analytics call", 4),
    ("Pusher", "a broadcast", 4),
    (".import(", "a bulk import", 3),
    ("gateway", "a payment gateway call", 5),
    ("Aws::", "a cloud API call", 6),
    ("Twilio", "an SMS API call", 6),
    ("Octokit", "a GitHub API call", 6),
    // GOV.UK's gds-api-adapters: every `GdsApi::` client speaks HTTP to
    // another GOV.UK service (publishing-api's content-store writes).
    ("GdsApi", "an HTTP call", 6),
    ("Airrecord", "an Airtable API call", 6),
    ("Google::Apis", "a Google API call", 6),
    ("mount_uploader", "a file upload", 4),
    // A download or an upload an application or gem wraps
    // (`blob.download`, `strategy.download_file!`, `MediaAsset.upload!`):
    // a transfer over the network or a disk, however it is named. An
    // attribute (`uploaded_at`) is neither.
    ("download*", "a file transfer", 4),
    (".upload!", "a file upload", 4),
    (".upload(", "a file upload", 4),
    ("Geocoder", "a geocoding lookup", 6),
    ("geocode", "a geocoding lookup", 6),
    ("webhook", "a webhook call", 4),
    ("*_api", "an API call", 3),
    ("*Client.new", "an API client", 4),
    ("OpenAI", "an LLM call", 6),
    ("openai", "an LLM call", 6),
    ("Anthropic", "an LLM call", 6),
    ("RubyLLM", "an LLM call", 6),
    ("deliver_now", "a mail delivery", 5),
    ("deliver_now!", "a mail delivery", 5),
    ("deliver_later", "a mail delivery", 3),
    (".deliver", "a mail delivery", 5),
    (".deliver!", "a mail delivery", 5),
    ("*Mailer.", "a mail delivery", 3),
    ("*Notifier.", "a notification", 3),
    ("perform_later", "a job enqueue", 3),
    ("perform_async", "a job enqueue", 3),
    ("perform_in", "a job enqueue", 4),
    ("perform_at", "a job enqueue", 4),
    ("perform_now", "a job run inline", 5),
    ("Resque.enqueue", "a job enqueue", 4),
    (".delay", "a job enqueue", 4),
    ("enqueue*", "a job enqueue", 3),
    // An application's own wrapper named for what it does
    // (`Whitehall::PublishingApi.republish_async(organisation)`, which
    // enqueues a Sidekiq job): the walk may not reach the enqueue inside.
    ("*_async", "a job enqueue", 3),
    ("reindex*", "search indexing", 5),
    ("__elasticsearch__", "search indexing", 5),
    ("Elasticsearch", "search indexing", 5),
    ("Searchkick", "search indexing", 5),
    ("percolate", "search indexing", 5),
    ("index_document", "search indexing", 5),
    ("Sunspot", "search indexing", 5),
    ("system(", "an external process", 5),
    ("Open3", "an external process", 5),
    ("IO.popen", "an external process", 5),
    // Document converters that run a program per call: LibreOffice
    // (libreconv), wkhtmltopdf (wicked_pdf, pdfkit), headless Chrome (grover).
    ("Libreconv", "an external process", 5),
    ("WickedPdf", "an external process", 5),
    ("PDFKit", "an external process", 5),
    ("Grover", "an external process", 5),
    ("shellout", "an external process", 5),
    ("scm.", "an external process", 4),
    ("sleep", "a sleep", 6),
    ("find_each", "a batch over many rows", 4),
    ("find_in_batches", "a batch over many rows", 4),
    ("in_batches", "a batch over many rows", 4),
    ("each_slice", "a batch over many rows", 4),
    ("update_all", "a batch write", 2),
    ("delete_all", "a batch write", 2),
    ("destroy_all", "a batch write", 2),
    ("insert_all", "a batch write", 3),
    ("upsert_all", "a batch write", 3),
    ("broadcast", "a broadcast", 3),
    ("dispatcher", "an event dispatch", 3),
    ("ActionCable", "a broadcast", 3),
    ("Slack", "a chat notification", 4),
    ("notify", "a notification", 2),
    ("*_notification", "a notification", 2),
    ("Redis", "a Redis call", 2),
    ("REDIS", "a Redis call", 2),
    ("render_to_string", "rendering", 3),
    ("FileUtils", "file work", 3),
    ("File.open", "file work", 3),
    ("File.write", "file work", 3),
    (".file(", "file work", 2),
    ("Prawn", "a PDF rendering", 4),
    ("CSV.generate", "a CSV export", 3),
    ("MiniMagick", "image processing", 4),
    ("ImageProcessing", "image processing", 4),
];

/// The shape a kind of slow work gives the transaction it runs in, as the
/// catalogue's patterns name them: a network call, an LLM call, or a side
/// effect (mail, notification, enqueue) that belongs after the commit.
/// A bare `.get(` or `.post(` gives no shape of its own: Redis, caches and
/// settings stores answer to the same verbs (a known client beside it does).
pub(super) fn shape_of(what: &str, needle: &str) -> Option<&'static str> {
    if matches!(needle, ".get(" | ".post(") {
        return None;
    }
    let network = [
        "an HTTP call",
        "a payment API call",
        "a payment gateway call",
        "a cloud API call",
        "an SMS API call",
        "a GitHub API call",
        "an Airtable API call",
        "a Google API call",
        "a bank API call",
        "a file transfer",
        "a Mailchimp API call",
        "a mail API call",
        "a geocoding lookup",
        "a webhook call",
        "an API call",
        "an API client",
        "a file upload",
        "search indexing",
    ];
    let side_effect = [
        "a mail delivery",
        "a notification",
        "a job enqueue",
        "a broadcast",
        "a chat notification",
        "an analytics call",
        "an event dispatch",
    ];
    if network.contains(&what) {
        Some("network-call")
    } else if what == "an LLM call" {
        Some("llm-call")
    } else if side_effect.contains(&what) {
        Some("side-effect")
    } else {
        None
    }
}

/// At most this much per needle: ten mails are not ten times the evidence.
const MAX_HITS: u32 = 2;

fn is_word(c: char) -> bool {
    c.is_alphanumeric() || c == '_'
}

/// How often `needle` occurs as a word (`*` lets it end an identifier).
pub(super) fn occurrences(text: &str, needle: &str) -> u32 {
    let (suffix, needle) = match needle.strip_prefix('*') {
        Some(rest) => (true, rest),
        None => (false, needle),
    };
    let (prefix, needle) = match needle.strip_suffix('*') {
        Some(rest) => (true, rest),
        None => (false, needle),
    };
    let starts_word = !suffix && needle.chars().next().is_some_and(is_word);
    let ends_word = !prefix && needle.chars().last().is_some_and(is_word);
    text.match_indices(needle)
        .filter(|(at, _)| {
            let before = text[..*at].chars().next_back();
            let after = text[at + needle.len()..].chars().next();
            let runs_on = starts_word && before.is_some_and(is_word)
                || ends_word && after.is_some_and(is_word);
            let bare_suffix = suffix && !before.is_some_and(is_word);
            !runs_on && !bare_suffix
        })
        .count() as u32
}

/// `code` with every line that runs only after the commit blanked (its
/// line count kept, so line numbers still hold): a call sent through an
/// after-commit helper (`deliver_after_commit`, an application's own on top
/// of the `after_commit_everywhere` gem), and the body of a block given to
/// `after_commit` (that gem's, or a record's transaction's in Rails 7.2)
/// or to `ActiveRecord.after_all_transactions_commit` (Rails 7.2). What
/// they run is outside the transaction, however slow.
pub(super) fn without_deferred(code: &str) -> String {
    let lines: Vec<&str> = code.lines().collect();
    let mut kept: Vec<&str> = Vec::with_capacity(lines.len());
    let mut i = 0;
    while i < lines.len() {
        let line = lines[i];
        let Some(block) = deferred_call(line) else {
            kept.push(line);
            i += 1;
            continue;
        };
        // A block's body, to its `end`, as a `transaction do` is reached.
        let last = if block {
            super::boundary::reach(&lines, i)
        } else {
            i
        };
        kept.extend(std::iter::repeat_n("", last + 1 - i));
        i = last + 1;
    }
    kept.join("\n")
}

/// Whether `line` defers work to after the commit: `Some(true)` when it
/// opens a multi-line block whose body is deferred too.
fn deferred_call(line: &str) -> Option<bool> {
    let code = line.trim();
    if code.starts_with('#') {
        return None;
    }
    let deferring = code.split(|c: char| !is_word(c)).any(|w| {
        w == "after_commit" || w.ends_with("_after_commit") || w == "after_all_transactions_commit"
    });
    if !deferring {
        return None;
    }
    Some(code.ends_with(" do") || code.contains(" do |"))
}

/// The part of a line slow work is looked for in: none of a comment, and
/// none of a method's `def` line, which names a method rather than calling
/// one (`def reindex_request_events` indexes nothing; its body is read
/// where it runs). Words in strings still count: ignoring them cost the
/// pattern held-out set one case of 37.
fn searched(line: &str) -> &str {
    let code = line.trim_start();
    // `GdsApi::GovukHeaders.headers[...]` reads the request's headers
    // from a thread-local: gds-api-adapters' one constant that calls
    // nothing (publishing-api's event log records them in its transaction).
    if code.starts_with('#') || code.starts_with("def ") || code.contains("GdsApi::GovukHeaders") {
        return "";
    }
    line
}

/// Slow work in `code` (comments dropped): (weight, what, needle) each.
pub(super) fn slow_work(code: &str) -> Vec<(u32, &'static str, &'static str)> {
    let code: String = without_deferred(code)
        .lines()
        .map(searched)
        .collect::<Vec<_>>()
        .join("\n");
    let mut found = Vec::new();
    for (needle, what, weight) in SLOW {
        let hits = occurrences(&code, needle).min(MAX_HITS);
        if hits > 0 {
            found.push((weight * hits, *what, needle.trim_matches('*')));
        }
    }
    if let Some(what) = loop_of_writes(&code) {
        found.push((LOOP_WEIGHT, what, ".each"));
    }
    found
}

/// Slow work line by line: (0-based line, weight, what, needle) for each
/// line of `code` that holds some, the heaviest kind on a line only, so
/// the prompt can name every slow call and where it is.
pub(super) fn slow_lines(code: &str) -> Vec<(usize, u32, &'static str, &'static str)> {
    let code = without_deferred(code);
    let lines: Vec<&str> = code.lines().collect();
    let mut found = Vec::new();
    for (i, line) in lines.iter().enumerate() {
        if line.trim_start().starts_with('#') {
            continue;
        }
        let code = searched(line);
        let heaviest = SLOW
            .iter()
            .filter(|(needle, ..)| occurrences(code, needle) > 0)
            .max_by_key(|(_, _, weight)| *weight);
        if let Some((needle, what, weight)) = heaviest {
            found.push((i, *weight, *what, needle.trim_matches('*')));
        } else if let Some(what) = loop_at(&lines, i) {
            found.push((i, LOOP_WEIGHT, what, ".each"));
        }
    }
    found
}

pub(super) const LOOP_WEIGHT: u32 = 3;

const LOOPS: [&str; 9] = [
    ".each do",
    ".each {",
    ".each_with_index",
    "each_slice",
    "find_each",
    "find_in_batches",
    ".map do",
    ".times do",
    "loop do",
];

const WRITES: [&str; 14] = [
    ".save",
    ".update",
    ".create",
    ".destroy",
    ".delete",
    "insert",
    "update_column",
    "increment!",
    ".touch",
    "perform_later",
    "perform_async",
    "deliver_later",
    "deliver_now",
    "create!",
];

/// A loop whose body writes rows or enqueues work: inside one transaction,
/// every row it touches stays locked to the end.
pub(super) fn loop_of_writes(code: &str) -> Option<&'static str> {
    let lines: Vec<&str> = code.lines().collect();
    (0..lines.len()).find_map(|i| loop_at(&lines, i))
}

/// Whether `lines[i]` opens a loop whose body writes or enqueues.
fn loop_at(lines: &[&str], i: usize) -> Option<&'static str> {
    let line = lines[i];
    if !LOOPS.iter().any(|l| line.contains(l)) {
        return None;
    }
    let indent = line.len() - line.trim_start().len();
    let one_line = line.contains('{') && line.contains('}');
    let body: Vec<&str> = if one_line {
        vec![line]
    } else {
        lines[i + 1..]
            .iter()
            .take_while(|l| l.trim().is_empty() || l.len() - l.trim_start().len() > indent)
            .copied()
            .collect()
    };
    let body = body.join("\n");
    let writes = WRITES
        .iter()
        .any(|w| occurrences(&body, w) > 0 || body.contains(w));
    writes.then_some("a loop of writes or enqueues")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mailers_and_jobs_are_found_as_words() {
        let code =
            "OrderMailer.confirm(self).deliver_now\n# Faraday.post(x)\nSyncJob.perform_later(id)";
        let found: Vec<&str> = slow_work(code).iter().map(|(_, _, n)| *n).collect();
        assert!(found.contains(&"deliver_now"), "{found:?}");
        assert!(found.contains(&"Mailer."), "{found:?}");
        assert!(found.contains(&"perform_later"), "{found:?}");
        assert!(
            !found.contains(&"Faraday"),
            "comments are not code: {found:?}"
        );
        assert_eq!(
            occurrences("Mailer.x", "*Mailer."),
            0,
            "a bare suffix is no mailer"
        );
        assert_eq!(occurrences("mail.deliver_later", ".deliver"), 0);
        let wrapper = slow_work("Whitehall::PublishingApi.republish_async(organisation)");
        assert_eq!(
            wrapper.iter().map(|(_, what, _)| *what).collect::<Vec<_>>(),
            ["a job enqueue"],
            "a method named for enqueueing is an enqueue"
        );
    }

    #[test]
    fn a_gds_api_client_is_an_http_call_and_its_headers_are_not() {
        let whats = |code: &str| -> Vec<&str> {
            slow_lines(code)
                .iter()
                .map(|(_, _, what, _)| *what)
                .collect()
        };
        assert_eq!(
            whats("GdsApi.publishing_api.put_content(content_id, payload)"),
            ["an HTTP call"]
        );
        assert!(
            whats("user_uid: GdsApi::GovukHeaders.headers[:x_govuk_authenticated_user],")
                .is_empty(),
            "the request's headers are read from a thread-local"
        );
    }

    #[test]
    fn slow_work_gives_the_shapes_the_catalogue_names() {
        let shapes = |code: &str| -> Vec<&str> {
            slow_work(code)
                .iter()
                .filter_map(|(_, what, needle)| shape_of(what, needle))
                .collect()
        };
        assert_eq!(shapes("Faraday.post(url)"), ["network-call"]);
        assert_eq!(
            shapes("Stripe::Refund.create(charge: id)"),
            ["network-call"]
        );
        assert_eq!(
            shapes("OpenAI::Client.new.chat(parameters: p)"),
            ["llm-call"]
        );
        assert_eq!(
            shapes("OrderMailer.placed(self).deliver_now"),
            ["side-effect"; 2]
        );
        assert!(
            shapes("REDIS.get(key)").is_empty(),
            "a bare .get( is no network call's shape"
        );
    }

    #[test]
    fn a_download_or_an_upload_is_a_transfer_and_an_attribute_named_so_is_not() {
        let what = |code: &str| -> Vec<&str> {
            slow_work(code).iter().map(|(_, what, _)| *what).collect()
        };
        assert_eq!(
            what("trainee_upload.download.force_encoding(enc)"),
            ["a file transfer"]
        );
        assert_eq!(what("strategy.download_file!(url)"), ["a file transfer"]);
        assert_eq!(
            what("media_asset = MediaAsset.upload!(media_file)"),
            ["a file upload"]
        );
        assert!(what("record.uploaded_at = Time.current").is_empty());
        assert!(what("redownload_count += 1").is_empty());
    }

    #[test]
    fn a_loop_that_writes_is_a_batch() {
        assert!(loop_of_writes("items.each do |i|\n  i.update!(x: 1)\nend").is_some());
        assert!(loop_of_writes("ids.each { |id| Job.perform_later(id) }").is_some());
        assert!(loop_of_writes("items.each do |i|\n  puts i\nend").is_none());
    }

    #[test]
    fn work_deferred_to_after_the_commit_is_not_slow_work_in_it() {
        let code = "CommentMailer.reply(self).deliver_after_commit\nafter_commit do\n  Faraday.post(url)\nend\nActiveRecord.after_all_transactions_commit { Slack.ping(x) }\nOrderMailer.placed(self).deliver_now";
        let found: Vec<&str> = slow_lines(code).iter().map(|(_, _, _, n)| *n).collect();
        assert_eq!(
            found,
            ["deliver_now"],
            "only the mail sent in the transaction"
        );
        assert_eq!(slow_lines(code)[0].0, 5, "line numbers are kept");
    }

    #[test]
    fn a_methods_def_line_names_it_and_runs_nothing() {
        let code = "def reindex_request_events\n  events.each(&:mark)\nend\ndef push\n  Faraday.post(\"https://partner.example/sync\")\nend";
        let found: Vec<(usize, &str)> = slow_lines(code)
            .iter()
            .map(|(i, _, what, _)| (*i, *what))
            .collect();
        assert_eq!(found, [(4, "an HTTP call")]);
        assert!(
            slow_work(code)
                .iter()
                .all(|(_, what, _)| *what == "an HTTP call"),
            "{:?}",
            slow_work(code)
        );
    }
}
