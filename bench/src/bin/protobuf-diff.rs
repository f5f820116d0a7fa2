//! Compares, for every `NAME.pb` in a directory with a `NAME.json` beside
//! it, the JSON Herald's transcoder writes from the protobuf answer with the
//! JSON answer the same server gave to the same request, byte for byte.
//!
//! `bench/kube-apiserver/protobuf-diff.sh` records the pairs from a real
//! kube-apiserver and runs this; its result is in TESTING.md. Prints one
//! line per pair and a summary; exits 1 when any pair differs.

use herald::informer::protobuf::{TranscodeError, Transcoder, difference};
use std::path::Path;
use std::process::ExitCode;

fn main() -> ExitCode {
    let Some(dir) = std::env::args_os().nth(1) else {
        eprintln!("usage: protobuf-diff DIR (NAME.pb and NAME.json pairs)");
        return ExitCode::from(2);
    };
    let dir = Path::new(&dir);
    let mut names: Vec<String> = match std::fs::read_dir(dir) {
        Ok(entries) => entries
            .flatten()
            .filter_map(|e| {
                let name = e.file_name().into_string().ok()?;
                Some(name.strip_suffix(".pb")?.to_owned())
            })
            .filter(|name| dir.join(format!("{name}.json")).is_file())
            .collect(),
        Err(err) => {
            eprintln!("protobuf-diff: {}: {err}", dir.display());
            return ExitCode::from(2);
        }
    };
    names.sort();
    let transcoder = Transcoder::new(false);
    let (mut same, mut objects, mut as_json) = (0, 0, 0);
    let mut differ = Vec::new();
    for name in &names {
        let wire = std::fs::read(dir.join(format!("{name}.pb"))).unwrap_or_default();
        let answer = std::fs::read_to_string(dir.join(format!("{name}.json"))).unwrap_or_default();
        let answer = answer.trim_end();
        let count = serde_json::from_str::<serde_json::Value>(answer)
            .ok()
            .and_then(|list| list["items"].as_array().map(Vec::len))
            .unwrap_or(1);
        let mut json = String::new();
        let verdict = match transcoder.object(&wire, &mut json) {
            Err(error @ TranscodeError::UnknownKind { .. }) => {
                println!("json     {name}: {error} (Herald asks for it as JSON)");
                as_json += 1;
                continue;
            }
            Err(error) => format!("not transcoded: {error}"),
            Ok(()) => difference(&json, answer).unwrap_or_default(),
        };
        if verdict.is_empty() {
            println!("same     {name} ({count} objects, {} bytes)", answer.len());
            same += 1;
            objects += count;
        } else {
            println!("DIFFERS  {name}: {verdict}");
            differ.push(name);
        }
    }
    println!(
        "{} answers: {same} byte-identical ({objects} objects), {as_json} of kinds read as JSON, {} differ",
        names.len(),
        differ.len()
    );
    if differ.is_empty() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}
