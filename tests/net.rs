//! The learned evaluation end to end: training data as bullet's
//! `ChessBoard` layout (checked by an independent reader written from the
//! documented layout, against python-chess), `selfplay --data` and
//! `net-data` giving the same files, validation games apart, and bad data
//! refused with exit 2.

mod common;

use std::{fs, io::Write, path::Path};

use common::{ok, repo, run, s};
use learnbook::tune::net::data::{self, Record};
use shakmaty::{fen::Fen, CastlingMode, Chess, EnPassantMode, Position};

/// Positions of random walks from starts with castling rights, en passant
/// and promotions, with made-up scores and results (White's view).
fn walk_positions() -> Vec<(Chess, i16, u8)> {
    let starts = [
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        "n1n5/PPPk4/8/8/8/8/4Kppp/5N1N b - - 0 1",
    ];
    let mut out = Vec::new();
    let mut x = 0x1234_5678_9abc_def1_u64;
    for fen in starts {
        let mut pos: Chess = fen
            .parse::<Fen>()
            .expect("fen")
            .into_position(CastlingMode::Standard)
            .expect("legal");
        for _ in 0..120 {
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let score = (x % 2001) as i16 - 1000;
            out.push((pos.clone(), score, (x >> 20) as u8 % 3));
            pos.play_unchecked(moves[(x >> 32) as usize % moves.len()]);
        }
    }
    out
}

#[test]
fn an_independent_reader_decodes_the_documented_layout() {
    if !common::have_python_chess() {
        return;
    }
    let dir = tempfile::tempdir().expect("tmp");
    let (bin, expected) = (dir.path().join("d.bin"), dir.path().join("expected.txt"));
    let mut records = Vec::new();
    let mut lines = String::new();
    for (pos, white_score, white_result) in walk_positions() {
        let stm_white = pos.turn().is_white();
        let (score, result) = if stm_white {
            (white_score, white_result)
        } else {
            (-white_score, 2 - white_result)
        };
        records.push(Record::from_position(&pos, score, result));
        let fen = Fen::from_position(&pos, EnPassantMode::Legal);
        lines.push_str(&format!(
            "{fen} | {white_score} | {}\n",
            f64::from(white_result) / 2.0
        ));
    }
    let mut f = fs::File::create(&bin).expect("create");
    data::write_records(&mut f, &records).expect("write");
    drop(f);
    fs::write(&expected, lines).expect("write");
    assert_eq!(
        data::read_file(&bin).expect("reads back"),
        records,
        "our reader"
    );
    let out = std::process::Command::new("python3")
        .arg(repo().join("scripts/nnue/bulletformat.py"))
        .args(["check", s(&bin), s(&expected)])
        .output()
        .expect("python3");
    assert!(
        out.status.success(),
        "the independent reader disagrees: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn selfplay(dir: &Path, extra: &[&str]) -> std::process::Output {
    let pgn = dir.join("g.pgn");
    let data = dir.join("g.bin");
    let mut args = vec![
        "selfplay",
        "--pgnout",
        s(&pgn),
        "--games",
        "6",
        "--nodes",
        "400",
        "--openings",
        "data/openings-sample.epd",
        "--concurrency",
        "2",
        "--data",
        s(&data),
        "--valid-every",
        "3",
    ];
    args.extend_from_slice(extra);
    let mut cmd = std::process::Command::new(common::bin());
    cmd.current_dir(repo()).args(&args);
    cmd.output().expect("selfplay")
}

#[test]
fn selfplay_writes_data_and_net_data_writes_the_same() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = selfplay(dir.path(), &[]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("6 games (2 validation"), "{text}");
    let train = data::read_file(&dir.path().join("g.bin")).expect("train");
    let valid = data::read_file(&dir.path().join("g.valid.bin")).expect("valid");
    assert!(
        train.len() > 50 && !valid.is_empty(),
        "{} {}",
        train.len(),
        valid.len()
    );
    // No mate scores, scores within --max-score.
    assert!(train.iter().all(|r| r.score.abs() < 3000));
    // The same from the PGN afterwards.
    let again = dir.path().join("again.bin");
    ok(&[
        "net-data",
        s(&dir.path().join("g.pgn")),
        "--out",
        s(&again),
        "--valid-every",
        "3",
    ]);
    assert_eq!(
        fs::read(&again).expect("again"),
        fs::read(dir.path().join("g.bin")).expect("g")
    );
    assert_eq!(
        fs::read(dir.path().join("again.valid.bin")).expect("again"),
        fs::read(dir.path().join("g.valid.bin")).expect("g")
    );
    // Keeping noisy positions keeps more.
    let noisy = dir.path().join("noisy.bin");
    ok(&[
        "net-data",
        s(&dir.path().join("g.pgn")),
        "--out",
        s(&noisy),
        "--valid-every",
        "3",
        "--keep-noisy",
    ]);
    assert!(data::read_file(&noisy).expect("noisy").len() > train.len());
}

#[test]
fn data_cut_short_or_not_data_is_refused() {
    let dir = tempfile::tempdir().expect("tmp");
    let cut = dir.path().join("cut.bin");
    let pos = Chess::default();
    let mut f = fs::File::create(&cut).expect("create");
    data::write_records(&mut f, &[Record::from_position(&pos, 0, 1); 3]).expect("write");
    f.write_all(&[1, 2, 3]).expect("write");
    drop(f);
    let e = data::read_file(&cut).expect_err("cut short");
    assert!(format!("{e:#}").contains("cut short"), "{e:#}");
    let text = dir.path().join("text.bin");
    fs::write(
        &text,
        "[Event \"a PGN file, not data\"]\n\n1. e4 e5 2. Nf3 *\n"
            .repeat(2)
            .as_bytes()[..64]
            .to_vec(),
    )
    .expect("write");
    assert_eq!(fs::metadata(&text).expect("len").len() % 32, 0);
    let e = data::read_file(&text).expect_err("not data");
    assert!(format!("{e:#}").contains("not a position"), "{e:#}");
    // net-data on a file that is not PGN games: exit 2, nothing written.
    let out = run(&[
        "net-data",
        "/nonexistent.pgn",
        "--out",
        s(&dir.path().join("x.bin")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(!dir.path().join("x.bin").exists());
}
