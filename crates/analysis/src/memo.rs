//! What the analysis reads from a file's text, remembered per thread. A
//! scan walks every entry point, and each walk asks the same model,
//! service and controller files for their methods, classes and mixins
//! again: before this memo, two thirds of a scan went to reading the same
//! texts over and over.
//!
//! The key is a quick hash of samples of the text (texts are often copies,
//! so their address says nothing); a hit counts only when the text is byte
//! for byte the one remembered, so a collision, even a crafted one, costs
//! a fresh read and never a wrong answer.

use std::cell::RefCell;
use std::collections::HashMap;
use std::rc::Rc;
use std::thread::LocalKey;

/// Texts remembered per thread and per kind before the memo starts over.
const REMEMBERED: usize = 4096;

pub(crate) type Memo<T> = RefCell<HashMap<(u64, usize), (Rc<str>, Rc<T>)>>;

/// A word-at-a-time multiplicative hash (as rustc's FxHash) of samples of
/// the text: its length, its start, its end and sixteen windows between.
/// Hashing whole files cost a fifth of a scan; the memo compares every hit
/// byte for byte anyway (a `memcmp`, many times faster), so texts that
/// differ only between the samples cost a fresh read, never a wrong one.
fn quick_hash(bytes: &[u8]) -> u64 {
    const K: u64 = 0x517c_c1b7_2722_0a95;
    const EDGE: usize = 512;
    const WINDOW: usize = 64;
    const WINDOWS: usize = 16;
    let mut hash = (bytes.len() as u64).wrapping_mul(K);
    let mut mix = |part: &[u8]| {
        let mut words = part.chunks_exact(8);
        for word in &mut words {
            let word = u64::from_le_bytes(word.try_into().expect("eight bytes"));
            hash = (hash.rotate_left(5) ^ word).wrapping_mul(K);
        }
        for &byte in words.remainder() {
            hash = (hash.rotate_left(5) ^ u64::from(byte)).wrapping_mul(K);
        }
    };
    if bytes.len() <= 2 * EDGE + WINDOWS * WINDOW {
        mix(bytes);
    } else {
        mix(&bytes[..EDGE]);
        mix(&bytes[bytes.len() - EDGE..]);
        let step = (bytes.len() - 2 * EDGE) / WINDOWS;
        for i in 0..WINDOWS {
            let at = EDGE + i * step;
            mix(&bytes[at..at + WINDOW]);
        }
    }
    hash
}

/// `build(text)`, from the memo when this thread made it already.
pub(crate) fn by_text<T: 'static>(
    memo: &'static LocalKey<Memo<T>>,
    text: &str,
    build: impl FnOnce(&str) -> T,
) -> Rc<T> {
    let key = (quick_hash(text.as_bytes()), text.len());
    let found = memo.with(|m| {
        m.borrow()
            .get(&key)
            .filter(|(seen, _)| **seen == *text)
            .map(|(_, made)| made.clone())
    });
    if let Some(found) = found {
        return found;
    }
    let made = Rc::new(build(text));
    memo.with(|m| {
        let mut m = m.borrow_mut();
        if m.len() >= REMEMBERED {
            m.clear();
        }
        m.insert(key, (Rc::from(text), made.clone()));
    });
    made
}

#[cfg(test)]
mod tests {
    use super::*;

    thread_local! {
        static LENGTHS: Memo<usize> = RefCell::new(HashMap::new());
    }

    #[test]
    fn the_same_text_is_read_once_and_another_text_afresh() {
        let mut builds = 0;
        let mut count = |text: &str| {
            by_text(&LENGTHS, text, |t| {
                builds += 1;
                t.len()
            })
        };
        assert_eq!(*count("def a; end"), 10);
        assert_eq!(*count("def a; end"), 10);
        assert_eq!(*count("def ab; end"), 11);
        // A changed text in the same buffer.
        let mut buffer = String::from("def x; end");
        assert_eq!(*count(&buffer), 10);
        buffer.replace_range(4..5, "y");
        assert_eq!(*count(&buffer), 10);
        // A long text changed where no sample looks.
        let mut long = "x".repeat(100_000);
        assert_eq!(*count(&long), 100_000);
        long.replace_range(50_001..50_002, "y");
        assert_eq!(*count(&long), 100_000);
        assert_eq!(builds, 6, "each changed text was read afresh");
    }
}
