//! The expression language of workflow files (`${{ }}`): lexer, parser,
//! evaluation with GitHub's coercions, and the functions, `hashFiles` included.

use super::*;

/// Internal evaluation error. `Runtime` errors fail the step (as on GitHub, e.g. fromJSON of bad
/// JSON); `Unsupported` and `Syntax` abort the rehearsal.
#[derive(Debug)]
pub(super) enum EvalErr {
    Unsupported(String),
    Syntax(String),
    Runtime(String),
}

impl From<EvalErr> for RehearsalError {
    fn from(e: EvalErr) -> Self {
        match e {
            EvalErr::Unsupported(m) => Unsupported(m),
            EvalErr::Syntax(m) | EvalErr::Runtime(m) => RehearsalError::Expression(m),
        }
    }
}

pub(super) fn syntax(src: &str, msg: &str) -> EvalErr {
    EvalErr::Syntax(format!("{msg} in `{src}`"))
}

#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Op {
    And,
    Or,
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
pub(super) enum Expr {
    Lit(Value),
    Ctx(String), // named value (context root), lower-cased: names are case-insensitive
    Index(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Bin(Op, Box<Expr>, Box<Expr>),
    Call(String, Vec<Expr>), // lower-cased function name
}

/// Functions of [expr] with their arity (names are case-insensitive: `toJson` is common).
pub(super) const FUNCTIONS: &[(&str, usize, usize)] = &[
    ("contains", 2, 2),
    ("startswith", 2, 2),
    ("endswith", 2, 2),
    ("format", 1, 255),
    ("join", 1, 2),
    ("tojson", 1, 1),
    ("fromjson", 1, 1),
    ("hashfiles", 1, 255),
    ("success", 0, 0),
    ("failure", 0, 0),
    ("always", 0, 0),
    ("cancelled", 0, 0),
];
pub(super) const STATUS_FUNCTIONS: &[&str] = &["success", "failure", "always", "cancelled"];

#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    P(&'static str),
}

pub(super) const PUNCT: &[&str] = &[
    "==", "!=", "<=", ">=", "&&", "||", "(", ")", "[", "]", ".", ",", "!", "<", ">", "*",
];

pub(super) fn lex(src: &str) -> Result<Vec<Tok>, EvalErr> {
    let c: Vec<char> = src.chars().collect();
    let (mut i, mut out) = (0, Vec::new());
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '\'' {
            // 'single-quoted', with '' as an escaped quote [expr: Literals]
            let mut s = String::new();
            i += 1;
            loop {
                match c.get(i) {
                    None => return Err(syntax(src, "unterminated string literal")),
                    Some('\'') if c.get(i + 1) == Some(&'\'') => {
                        s.push('\'');
                        i += 2;
                    }
                    Some('\'') => {
                        i += 1;
                        break;
                    }
                    Some(&x) => {
                        s.push(x);
                        i += 1;
                    }
                }
            }
            out.push(Tok::Str(s));
        } else if ch.is_ascii_digit()
            || (ch == '-'
                && c.get(i + 1)
                    .is_some_and(|d| d.is_ascii_digit() || *d == '.'))
        {
            let start = i;
            i += 1;
            while i < c.len()
                && (c[i].is_ascii_alphanumeric()
                    || c[i] == '.'
                    || (matches!(c[i], '+' | '-') && matches!(c[i - 1], 'e' | 'E')))
            {
                i += 1;
            }
            let text: String = c[start..i].iter().collect();
            let n = if let Some(hex) = text.strip_prefix("0x") {
                i64::from_str_radix(hex, 16).ok().map(|n| n as f64)
            } else if text.chars().all(|d| "0123456789.eE+-".contains(d)) {
                text.parse::<f64>().ok()
            } else {
                None
            };
            out.push(Tok::Num(
                n.ok_or_else(|| syntax(src, &format!("bad number `{text}`")))?,
            ));
        } else if ch.is_alphabetic() || ch == '_' {
            // identifiers may contain '-': steps.my-step.outputs.x
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '-') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else {
            let two: String = c[i..(i + 2).min(c.len())].iter().collect();
            let p = PUNCT.iter().find(|p| two.starts_with(**p));
            let p = p.ok_or_else(|| syntax(src, &format!("unexpected character {ch:?}")))?;
            out.push(Tok::P(p));
            i += p.len();
        }
    }
    Ok(out)
}

/// Recursive descent, precedence per [expr: Operators]: `!` > comparisons > `==`/`!=` > `&&` > `||`.
pub(super) struct Parser<'a> {
    toks: Vec<Tok>,
    i: usize,
    src: &'a str,
}

impl Parser<'_> {
    fn eat(&mut self, p: &str) -> bool {
        let hit = matches!(self.toks.get(self.i), Some(Tok::P(x)) if *x == p);
        self.i += hit as usize;
        hit
    }
    fn expect(&mut self, p: &str) -> Result<(), EvalErr> {
        if self.eat(p) {
            Ok(())
        } else {
            Err(syntax(self.src, &format!("expected `{p}`")))
        }
    }
    fn binary(
        &mut self,
        ops: &[(&str, Op)],
        next: fn(&mut Self) -> Result<Expr, EvalErr>,
    ) -> Result<Expr, EvalErr> {
        let mut left = next(self)?;
        'outer: loop {
            for (tok, op) in ops {
                if self.eat(tok) {
                    left = Expr::Bin(*op, Box::new(left), Box::new(next(self)?));
                    continue 'outer;
                }
            }
            return Ok(left);
        }
    }
    fn or(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("||", Op::Or)], Self::and)
    }
    fn and(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("&&", Op::And)], Self::eq)
    }
    fn eq(&mut self) -> Result<Expr, EvalErr> {
        self.binary(&[("==", Op::Eq), ("!=", Op::Ne)], Self::cmp)
    }
    fn cmp(&mut self) -> Result<Expr, EvalErr> {
        self.binary(
            &[("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)],
            Self::unary,
        )
    }
    fn unary(&mut self) -> Result<Expr, EvalErr> {
        if self.eat("!") {
            Ok(Expr::Not(Box::new(self.unary()?)))
        } else {
            self.postfix()
        }
    }
    fn postfix(&mut self) -> Result<Expr, EvalErr> {
        let mut e = self.primary()?;
        loop {
            if self.eat(".") {
                match self.toks.get(self.i).cloned() {
                    Some(Tok::Ident(name)) => {
                        self.i += 1;
                        e = Expr::Index(Box::new(e), Box::new(Expr::Lit(Value::String(name))));
                    }
                    Some(Tok::P("*")) => {
                        return Err(EvalErr::Unsupported(format!(
                            "object filter `.*` in `{}`",
                            self.src
                        )))
                    }
                    _ => return Err(syntax(self.src, "expected a property name after `.`")),
                }
            } else if self.eat("[") {
                if self.eat("*") {
                    return Err(EvalErr::Unsupported(format!(
                        "object filter `[*]` in `{}`",
                        self.src
                    )));
                }
                let key = self.or()?;
                self.expect("]")?;
                e = Expr::Index(Box::new(e), Box::new(key));
            } else {
                return Ok(e);
            }
        }
    }
    fn primary(&mut self) -> Result<Expr, EvalErr> {
        let tok = self
            .toks
            .get(self.i)
            .cloned()
            .ok_or_else(|| syntax(self.src, "unexpected end"))?;
        self.i += 1;
        Ok(match tok {
            Tok::Num(n) => Expr::Lit(num(n)),
            Tok::Str(s) => Expr::Lit(Value::String(s)),
            Tok::Ident(s) if s == "true" || s == "false" => Expr::Lit(Value::Bool(s == "true")),
            Tok::Ident(s) if s == "null" => Expr::Lit(Value::Null),
            Tok::Ident(s) if self.eat("(") => {
                let name = s.to_lowercase();
                let mut args = Vec::new();
                if !self.eat(")") {
                    loop {
                        args.push(self.or()?);
                        if self.eat(")") {
                            break;
                        }
                        self.expect(",")?;
                    }
                }
                let Some((_, min, max)) = FUNCTIONS.iter().find(|f| f.0 == name) else {
                    return Err(EvalErr::Unsupported(format!(
                        "function `{s}()` in `{}`",
                        self.src
                    )));
                };
                if args.len() < *min || args.len() > *max {
                    return Err(syntax(
                        self.src,
                        &format!("wrong number of arguments to `{s}()`"),
                    ));
                }
                Expr::Call(name, args)
            }
            Tok::Ident(s) => Expr::Ctx(s.to_lowercase()),
            Tok::P("(") => {
                let e = self.or()?;
                self.expect(")")?;
                e
            }
            t => return Err(syntax(self.src, &format!("unexpected token {t:?}"))),
        })
    }
}

pub(super) fn parse_expr(src: &str) -> Result<Expr, EvalErr> {
    let toks = lex(src)?;
    if toks.is_empty() {
        return Err(syntax(src, "empty expression"));
    }
    let mut p = Parser { toks, i: 0, src };
    let e = p.or()?;
    if p.i != p.toks.len() {
        return Err(syntax(src, "unexpected trailing tokens"));
    }
    Ok(e)
}

pub(super) fn walk<'a>(e: &'a Expr, f: &mut dyn FnMut(&'a Expr)) {
    f(e);
    match e {
        Expr::Index(a, b) | Expr::Bin(_, a, b) => {
            walk(a, f);
            walk(b, f);
        }
        Expr::Not(a) => walk(a, f),
        Expr::Call(_, args) => args.iter().for_each(|a| walk(a, f)),
        Expr::Lit(_) | Expr::Ctx(_) => {}
    }
}

pub(super) enum Piece {
    Text(String),
    Expr(Expr),
}

/// Splits `text` at every `${{ ... }}`; a `}}` inside a string literal does not close it.
pub(super) fn parse_template(text: &str) -> Result<Vec<Piece>, EvalErr> {
    let (mut out, mut rest) = (Vec::new(), text);
    while let Some(start) = rest.find("${{") {
        if start > 0 {
            out.push(Piece::Text(rest[..start].to_string()));
        }
        let body = &rest[start + 3..];
        let (b, mut quoted, mut end) = (body.as_bytes(), false, None);
        for i in 0..b.len() {
            if b[i] == b'\'' {
                quoted = !quoted;
            } else if !quoted && b[i..].starts_with(b"}}") {
                end = Some(i);
                break;
            }
        }
        let end = end.ok_or_else(|| syntax(text, "`${{` without a closing `}}`"))?;
        out.push(Piece::Expr(parse_expr(&body[..end])?));
        rest = &body[end + 2..];
    }
    if !rest.is_empty() {
        out.push(Piece::Text(rest.to_string()));
    }
    Ok(out)
}

/// Builds the condition of an `if:` [syntax: jobs.<job_id>.steps[*].if]. `${{ }}` is optional;
/// text around `${{ }}` makes it a (non-empty, so always true) string, exactly as GitHub turns it
/// into format(). Without a status function it becomes `success() && (<expr>)`
/// [expr: Status check functions].
pub(super) fn condition_expr(raw: &str) -> Result<Expr, EvalErr> {
    let t = raw.trim();
    let call = |n: &str| Expr::Call(n.into(), vec![]);
    if t.is_empty() {
        return Ok(call("success"));
    }
    let e = if t.contains("${{") {
        let mut pieces = parse_template(t)?;
        if let [Piece::Expr(_)] = pieces.as_slice() {
            let Some(Piece::Expr(e)) = pieces.pop() else {
                unreachable!()
            };
            e
        } else {
            let (mut fmt, mut args) = (String::new(), vec![Expr::Lit(Value::Null)]);
            for p in pieces {
                match p {
                    Piece::Text(s) => fmt.push_str(&s.replace('{', "{{").replace('}', "}}")),
                    Piece::Expr(e) => {
                        fmt.push_str(&format!("{{{}}}", args.len() - 1));
                        args.push(e);
                    }
                }
            }
            args[0] = Expr::Lit(Value::String(fmt));
            Expr::Call("format".into(), args)
        }
    } else {
        parse_expr(t)?
    };
    let mut has_status = false;
    walk(
        &e,
        &mut |n| {
            has_status |= matches!(n, Expr::Call(f, _) if STATUS_FUNCTIONS.contains(&f.as_str()))
        },
    );
    Ok(if has_status {
        e
    } else {
        Expr::Bin(Op::And, Box::new(call("success")), Box::new(e))
    })
}

pub(super) fn render(text: &str, ctx: &Contexts) -> Result<String, EvalErr> {
    let mut out = String::new();
    for p in parse_template(text)? {
        match p {
            Piece::Text(s) => out.push_str(&s),
            Piece::Expr(e) => out.push_str(&to_str(&eval(&e, ctx)?)),
        }
    }
    Ok(out)
}

pub(super) fn num(x: f64) -> Value {
    if x.fract() == 0.0 && x.abs() < 9e15 {
        Value::from(x as i64) // so toJSON(1) is "1", not "1.0"
    } else {
        serde_json::Number::from_f64(x).map_or(Value::Null, Value::Number)
    }
}

/// .NET "G15" number formatting, as the runner uses: 15 significant digits, no trailing zeros.
pub(super) fn fmt_num(x: f64) -> String {
    if x.is_nan() {
        return "NaN".into();
    }
    if x.is_infinite() {
        return if x > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    if x.fract() == 0.0 && x.abs() < 1e15 {
        return format!("{}", x as i64);
    }
    let exp = x.abs().log10().floor() as i32;
    if (-5..15).contains(&exp) {
        let s = format!("{:.*}", (14 - exp).max(0) as usize, x);
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        let s = format!("{:.14e}", x);
        let (mantissa, e) = s.split_once('e').unwrap_or((&s, "0"));
        let mantissa = mantissa.trim_end_matches('0').trim_end_matches('.');
        let e: i32 = e.parse().unwrap_or(0);
        format!("{mantissa}E{}{:02}", if e < 0 { '-' } else { '+' }, e.abs())
    }
}

/// Conversion to string [expr: Literals; runner EvaluationResult.ConvertToString]: null -> '',
/// booleans -> true/false, numbers G15, and objects/arrays -> 'Object'/'Array' (not JSON; use toJSON).
pub(super) fn to_str(v: &Value) -> String {
    match v {
        Value::Null => String::new(),
        Value::Bool(b) => b.to_string(),
        Value::Number(n) => fmt_num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => s.clone(),
        Value::Array(_) => "Array".into(),
        Value::Object(_) => "Object".into(),
    }
}

/// Falsy: false, 0, -0, NaN, '', null [expr: Operators].
pub(super) fn truthy(v: &Value) -> bool {
    match v {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::Number(n) => n.as_f64().is_some_and(|x| x != 0.0 && !x.is_nan()),
        Value::String(s) => !s.is_empty(),
        _ => true,
    }
}

/// String -> number like JavaScript's Number(): trimmed, '' is 0, hex 0x.., otherwise NaN.
pub(super) fn parse_number(s: &str) -> f64 {
    let s = s.trim();
    if s.is_empty() {
        0.0
    } else if let Some(hex) = s.strip_prefix("0x") {
        i64::from_str_radix(hex, 16).map_or(f64::NAN, |n| n as f64)
    } else if s == "Infinity" || s == "-Infinity" {
        if s.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            f64::INFINITY
        }
    } else if s.chars().all(|c| "0123456789.eE+-".contains(c)) {
        s.parse().unwrap_or(f64::NAN)
    } else {
        f64::NAN
    }
}

/// A primitive for comparisons (NaN needs representing, which serde_json cannot).
#[derive(Debug)]
pub(super) enum Prim {
    Null,
    Bool(bool),
    Num(f64),
    Str(String),
    Obj,
}

pub(super) fn prim(v: &Value) -> Prim {
    match v {
        Value::Null => Prim::Null,
        Value::Bool(b) => Prim::Bool(*b),
        Value::Number(n) => Prim::Num(n.as_f64().unwrap_or(f64::NAN)),
        Value::String(s) => Prim::Str(s.clone()),
        _ => Prim::Obj,
    }
}

pub(super) fn prim_num(p: &Prim) -> f64 {
    match p {
        Prim::Null => 0.0,
        Prim::Bool(b) => *b as u8 as f64,
        Prim::Num(n) => *n,
        Prim::Str(s) => parse_number(s),
        Prim::Obj => f64::NAN,
    }
}

/// Loose-equality coercion [expr: Operators]: when types differ, null/bool/string become numbers
/// (runner EvaluationResult.CoerceTypes); objects are never coerced.
pub(super) fn coerce(a: &Value, b: &Value) -> (Prim, Prim) {
    let (mut a, mut b) = (prim(a), prim(b));
    loop {
        match (&a, &b) {
            _ if std::mem::discriminant(&a) == std::mem::discriminant(&b) => return (a, b),
            (Prim::Num(_), Prim::Str(_)) => b = Prim::Num(prim_num(&b)),
            (Prim::Str(_), Prim::Num(_)) => a = Prim::Num(prim_num(&a)),
            (Prim::Bool(_) | Prim::Null, _) => a = Prim::Num(prim_num(&a)),
            (_, Prim::Bool(_) | Prim::Null) => b = Prim::Num(prim_num(&b)),
            _ => return (a, b),
        }
    }
}

pub(super) fn upper(s: &str) -> String {
    s.to_uppercase() // ordinal-ignore-case, as the runner compares strings
}

pub(super) fn loose_eq(a: &Value, b: &Value) -> bool {
    match coerce(a, b) {
        (Prim::Null, Prim::Null) => true,
        (Prim::Num(x), Prim::Num(y)) => x == y, // NaN is never equal
        (Prim::Str(x), Prim::Str(y)) => upper(&x) == upper(&y),
        (Prim::Bool(x), Prim::Bool(y)) => x == y,
        _ => false, // objects/arrays are equal only when the same instance
    }
}

pub(super) fn loose_order(a: &Value, b: &Value) -> Option<std::cmp::Ordering> {
    match coerce(a, b) {
        (Prim::Num(x), Prim::Num(y)) => x.partial_cmp(&y),
        (Prim::Str(x), Prim::Str(y)) => Some(upper(&x).cmp(&upper(&y))),
        (Prim::Bool(x), Prim::Bool(y)) => Some(x.cmp(&y)),
        _ => None,
    }
}

pub(super) fn is_primitive(v: &Value) -> bool {
    !matches!(v, Value::Array(_) | Value::Object(_))
}

pub(super) fn index(base: &Value, key: &Value, case_sensitive: bool) -> Option<Value> {
    match base {
        Value::Object(m) => {
            let k = to_str(key);
            let hit = m.get(&k);
            let hit = hit.or_else(|| {
                (!case_sensitive)
                    .then(|| {
                        m.iter()
                            .find(|(n, _)| upper(n) == upper(&k))
                            .map(|(_, v)| v)
                    })
                    .flatten()
            });
            hit.cloned()
        }
        Value::Array(a) => {
            let n = prim_num(&prim(key));
            (n.fract() == 0.0 && n >= 0.0)
                .then(|| a.get(n as usize).cloned())
                .flatten()
        }
        _ => None,
    }
}

pub(super) fn eval(e: &Expr, ctx: &Contexts) -> Result<Value, EvalErr> {
    match e {
        Expr::Lit(v) => Ok(v.clone()),
        Expr::Ctx(name) => ctx.values.get(name).cloned().ok_or_else(|| {
            EvalErr::Unsupported(format!(
                "context `{name}` (not available to this rehearsal here)"
            ))
        }),
        Expr::Index(base, key) => {
            let (b, k) = (eval(base, ctx)?, eval(key, ctx)?);
            let root = match &**base {
                Expr::Ctx(r) => Some(r.as_str()),
                _ => None,
            };
            // env is case-sensitive on Linux (runner CaseSensitiveDictionaryContextData)
            match index(&b, &k, root == Some("env")) {
                Some(v) => Ok(v),
                None if root.is_some_and(|r| STRICT_ROOTS.contains(&r)) => {
                    Err(EvalErr::Unsupported(format!(
                        "`{}.{}` is not modelled by the rehearsal",
                        root.unwrap_or_default(),
                        to_str(&k)
                    )))
                }
                None => Ok(Value::Null), // missing property: null, formatted as ''
            }
        }
        Expr::Not(x) => Ok(Value::Bool(!truthy(&eval(x, ctx)?))),
        // && and || return an operand's value, short-circuiting [expr: Operators]
        Expr::Bin(Op::And, l, r) => {
            let lv = eval(l, ctx)?;
            if truthy(&lv) {
                eval(r, ctx)
            } else {
                Ok(lv)
            }
        }
        Expr::Bin(Op::Or, l, r) => {
            let lv = eval(l, ctx)?;
            if truthy(&lv) {
                Ok(lv)
            } else {
                eval(r, ctx)
            }
        }
        Expr::Bin(op, l, r) => {
            let (a, b) = (eval(l, ctx)?, eval(r, ctx)?);
            use std::cmp::Ordering::*;
            let ord = loose_order(&a, &b);
            Ok(Value::Bool(match op {
                Op::Eq => loose_eq(&a, &b),
                Op::Ne => !loose_eq(&a, &b),
                Op::Lt => ord == Some(Less),
                Op::Gt => ord == Some(Greater),
                Op::Le => loose_eq(&a, &b) || ord == Some(Less),
                Op::Ge => loose_eq(&a, &b) || ord == Some(Greater),
                Op::And | Op::Or => unreachable!(),
            }))
        }
        Expr::Call(name, args) => call(name, args, ctx),
    }
}

pub(super) fn call(name: &str, args: &[Expr], ctx: &Contexts) -> Result<Value, EvalErr> {
    let vals = args
        .iter()
        .map(|a| eval(a, ctx))
        .collect::<Result<Vec<_>, _>>()?;
    let both_str = |f: fn(&str, &str) -> bool| {
        let ok = is_primitive(&vals[0]) && is_primitive(&vals[1]);
        Value::Bool(ok && f(&upper(&to_str(&vals[0])), &upper(&to_str(&vals[1]))))
    };
    Ok(match name {
        "contains" => match &vals[0] {
            Value::Array(items) => Value::Bool(items.iter().any(|i| loose_eq(i, &vals[1]))),
            _ => both_str(|a, b| a.contains(b)),
        },
        "startswith" => both_str(|a, b| a.starts_with(b)),
        "endswith" => both_str(|a, b| a.ends_with(b)),
        "format" => Value::String(format_fn(&to_str(&vals[0]), &vals[1..])?),
        "join" => Value::String(match &vals[0] {
            Value::Array(items) => {
                let sep = vals
                    .get(1)
                    .filter(|s| is_primitive(s))
                    .map_or(",".into(), to_str);
                items.iter().map(to_str).collect::<Vec<_>>().join(&sep)
            }
            v if is_primitive(v) => to_str(v),
            _ => String::new(),
        }),
        "tojson" => Value::String(serde_json::to_string_pretty(&vals[0]).unwrap_or_default()),
        "fromjson" => serde_json::from_str(&to_str(&vals[0])).map_err(|e| {
            EvalErr::Runtime(format!(
                "fromJSON: invalid JSON {:?}: {e}",
                to_str(&vals[0])
            ))
        })?,
        "hashfiles" => {
            let ws = ctx
                .workspace
                .as_ref()
                .ok_or_else(|| EvalErr::Unsupported("hashFiles() without a workspace".into()))?;
            Value::String(hash_files(
                ws,
                &vals.iter().map(to_str).collect::<Vec<_>>(),
            )?)
        }
        "success" => Value::Bool(!ctx.job_failed),
        "failure" => Value::Bool(ctx.job_failed),
        "always" => Value::Bool(true),
        "cancelled" => Value::Bool(false), // a rehearsal is never cancelled
        other => return Err(EvalErr::Unsupported(format!("function `{other}()`"))),
    })
}

/// format('{0} {1}', a, b) with `{{` / `}}` escapes [expr: format]; bad strings are errors.
pub(super) fn format_fn(fmt: &str, args: &[Value]) -> Result<String, EvalErr> {
    let bad = || {
        EvalErr::Runtime(format!(
            "format: invalid format string {fmt:?} for {} argument(s)",
            args.len()
        ))
    };
    let (c, mut out, mut i) = (fmt.chars().collect::<Vec<_>>(), String::new(), 0);
    while i < c.len() {
        match (c[i], c.get(i + 1)) {
            ('{', Some('{')) | ('}', Some('}')) => {
                out.push(c[i]);
                i += 2;
            }
            ('{', _) => {
                let close = c[i..].iter().position(|&x| x == '}').ok_or_else(bad)? + i;
                let idx: usize = c[i + 1..close]
                    .iter()
                    .collect::<String>()
                    .parse()
                    .map_err(|_| bad())?;
                out.push_str(&to_str(args.get(idx).ok_or_else(bad)?));
                i = close + 1;
            }
            ('}', _) => return Err(bad()),
            (ch, _) => {
                out.push(ch);
                i += 1;
            }
        }
    }
    Ok(out)
}

/// hashFiles(patterns...) [expr: hashFiles]: sha256 over the sha256 digests of the matching files
/// under the workspace; '' when none match. As in the runner (@actions/glob): `*`/`?` within a path
/// segment, `**` across segments, dot-files included, a matching directory includes its files,
/// `!pattern` excludes, the last matching pattern wins. Files are hashed in sorted path order
/// (the runner uses directory-walk order; sorting keeps the rehearsal deterministic).
pub(super) fn hash_files(ws: &Path, patterns: &[String]) -> Result<String, EvalErr> {
    let pats: Vec<(bool, Vec<String>)> = patterns
        .iter()
        .flat_map(|p| {
            p.lines()
                .map(str::trim)
                .filter(|l| !l.is_empty())
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .map(|p| {
            let (neg, p) = match p.strip_prefix('!') {
                Some(rest) => (true, rest.to_string()),
                None => (false, p),
            };
            let p = p
                .strip_prefix(&format!("{}/", ws.display()))
                .map(str::to_string)
                .unwrap_or(p);
            (
                neg,
                p.trim_start_matches("./")
                    .split('/')
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect(),
            )
        })
        .collect();
    let mut files = Vec::new();
    walk_files(ws, "", &mut files).map_err(|e| EvalErr::Runtime(format!("hashFiles: {e}")))?;
    files.sort();
    let mut outer = Sha256::new();
    let mut any = false;
    for rel in files {
        let segs: Vec<&str> = rel.split('/').collect();
        let mut selected = false;
        for (neg, pat) in &pats {
            let pat: Vec<&str> = pat.iter().map(String::as_str).collect();
            if (1..=segs.len()).any(|n| glob_match(&pat, &segs[..n])) {
                selected = !neg;
            }
        }
        if selected {
            let bytes = fs::read(ws.join(&rel))
                .map_err(|e| EvalErr::Runtime(format!("hashFiles: {rel}: {e}")))?;
            outer.update(Sha256::digest(&bytes));
            any = true;
        }
    }
    Ok(if any {
        outer
            .finalize()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    } else {
        String::new()
    })
}

pub(super) fn walk_files(dir: &Path, rel: &str, out: &mut Vec<String>) -> std::io::Result<()> {
    for entry in fs::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let rel_path = if rel.is_empty() {
            name
        } else {
            format!("{rel}/{name}")
        };
        let ft = entry.file_type()?;
        if ft.is_dir() {
            walk_files(&entry.path(), &rel_path, out)?; // symlinked dirs are not followed
        } else if ft.is_file() || fs::metadata(entry.path()).is_ok_and(|m| m.is_file()) {
            out.push(rel_path);
        }
    }
    Ok(())
}

pub(super) fn glob_match(pat: &[&str], path: &[&str]) -> bool {
    match pat.split_first() {
        None => path.is_empty(),
        Some((&"**", rest)) => (0..=path.len()).any(|i| glob_match(rest, &path[i..])),
        Some((p, rest)) => {
            !path.is_empty()
                && seg_match(p.as_bytes(), path[0].as_bytes())
                && glob_match(rest, &path[1..])
        }
    }
}

pub(super) fn seg_match(p: &[u8], s: &[u8]) -> bool {
    match p.split_first() {
        None => s.is_empty(),
        Some((b'*', rest)) => (0..=s.len()).any(|i| seg_match(rest, &s[i..])),
        Some((b'?', rest)) => !s.is_empty() && seg_match(rest, &s[1..]),
        Some((c, rest)) => s.first() == Some(c) && seg_match(rest, &s[1..]),
    }
}

// ───────────────────────────── workflow model ─────────────────────────────
