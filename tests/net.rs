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
    // Fails the test if the independent reader disagrees.
    common::python(&[
        s(&repo().join("scripts/nnue/bulletformat.py")),
        "check",
        s(&bin),
        s(&expected),
    ]);
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
    let pgn = "[Event \"a PGN file, not data\"]\n\n1. e4 e5 2. Nf3 *\n".repeat(2);
    fs::write(&text, &pgn.as_bytes()[..64]).expect("write");
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

/// Runs `learnbook uci ARGS` on `input`; its output.
fn uci(args: &[&str], input: &str) -> std::process::Output {
    use std::io::Write as _;
    let mut child = std::process::Command::new(common::bin())
        .arg("uci")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("uci");
    // An engine that refuses its arguments exits before reading.
    let _ = child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input.as_bytes());
    child.wait_with_output().expect("wait")
}

fn static_evals(out: &std::process::Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|l| l.starts_with("info string static eval"))
        .map(String::from)
        .collect()
}

#[test]
fn train_makes_a_net_the_engine_plays_and_bad_nets_change_nothing() {
    let dir = tempfile::tempdir().expect("tmp");
    let out = selfplay(dir.path(), &[]);
    assert!(out.status.success());
    let (data, valid) = (dir.path().join("g.bin"), dir.path().join("g.valid.bin"));
    let net = dir.path().join("n.nnue");
    let ck = dir.path().join("ck.gz");
    let train = |extra: &[&str]| {
        let mut args = vec![
            "train",
            "--data",
            s(&data),
            "--valid",
            s(&valid),
            "--out",
            s(&net),
            "--checkpoint",
            s(&ck),
            "--hidden",
            "8",
            "--epochs",
            "2",
            "--batch",
            "64",
            "--threads",
            "1",
        ];
        args.extend_from_slice(extra);
        run(&args)
    };
    let best = dir.path().join("best.nnue");
    let first = train(&["--best", s(&best), "--mirror"]);
    assert!(
        first.status.success(),
        "{}",
        String::from_utf8_lossy(&first.stderr)
    );
    let text = String::from_utf8_lossy(&first.stdout);
    assert!(text.contains("epoch   2: training loss"), "{text}");
    let bytes = fs::read(&net).expect("net");
    // The best epoch's net is a net too.
    learnbook::engine::net::Network::load(&best).expect("the best epoch's net");
    assert_eq!(bytes.len(), learnbook::engine::net::file_bytes(8));
    // The engine plays with it: EvalFile and --net give the same evaluation,
    // not the hand-crafted one (`none`) nor the embedded default.
    let fen = "position fen r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4\n";
    let hand = static_evals(&uci(&["--net", "none"], &format!("{fen}eval\nquit\n")));
    let embedded = static_evals(&uci(&[], &format!("{fen}eval\nquit\n")));
    let with_net = static_evals(&uci(&["--net", s(&net)], &format!("{fen}eval\nquit\n")));
    let set = uci(
        &[],
        &format!(
            "setoption name EvalFile value {}\n{fen}eval\nquit\n",
            s(&net)
        ),
    );
    assert_eq!(static_evals(&set), with_net);
    let position = learnbook::engine::position::Position::from_fen(
        "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4",
    )
    .expect("fen")
    .chess;
    let said = |cp: i32| vec![format!("info string static eval {cp} cp (side to move)")];
    let file_net = learnbook::engine::net::Network::load(&net).expect("load");
    assert_eq!(with_net, said(file_net.evaluate_position(&position)));
    let default_net = learnbook::engine::default_net::embedded().expect("embedded");
    assert_eq!(embedded, said(default_net.evaluate_position(&position)));
    assert_ne!(hand, with_net);
    assert_ne!(hand, embedded);
    // EvalFile switches among the three: none, a file, the embedded net by name.
    let switched = uci(
        &[],
        &format!(
            "setoption name EvalFile value none\n{fen}eval\n\
             setoption name EvalFile value {}\n{fen}eval\n\
             setoption name EvalFile value {}\n{fen}eval\nquit\n",
            s(&net),
            learnbook::engine::default_net::EMBEDDED_NAME
        ),
    );
    let three = [hand.clone(), with_net.clone(), embedded.clone()].concat();
    assert_eq!(static_evals(&switched), three);
    // An evaluation weight set while a net evaluates is said to be idle.
    let idle = uci(&[], "setoption name knight_mg value 400\nquit\n");
    assert!(String::from_utf8_lossy(&idle.stdout).contains("not in use while a net evaluates"));
    // A game with the net.
    let go = uci(&["--net", s(&net)], &format!("{fen}go nodes 2000\n"));
    assert!(String::from_utf8_lossy(&go.stdout).contains("bestmove "));
    // A truncated net, one of the wrong size, a data file: refused with exit 2,
    // and in UCI an info string with the evaluation in use kept.
    let cut = dir.path().join("cut.nnue");
    fs::write(&cut, &bytes[..bytes.len() - 64]).expect("write");
    for bad in [s(&cut), s(&data), "/nonexistent.nnue"] {
        let out = uci(&["--net", bad], "quit\n");
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("learnbook: "), "{err}");
        let out = uci(
            &["--net", s(&net)],
            &format!("setoption name EvalFile value {bad}\n{fen}eval\nquit\n"),
        );
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(text.contains("info string EvalFile not loaded"), "{text}");
        assert_eq!(static_evals(&out), with_net, "the net in use stays");
    }
    let out = run(&[
        "play",
        "--engine",
        &format!("name=a,cmd=builtin,net={}", s(&cut)),
        "--engine",
        "name=b,cmd=builtin",
        "--nodes",
        "100",
    ]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "a bad net= is refused before the games"
    );
    // `bench` searches with the embedded net, `--net none` with the
    // hand-crafted evaluation, `--net FILE` with that net: three
    // signatures; a bad file is refused.
    let signature = |extra: &[&str]| {
        let mut args = vec!["bench", "--depth", "3"];
        args.extend_from_slice(extra);
        let out = run(&args);
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        (out.status.code(), text.lines().last().map(String::from))
    };
    let (code, default_signature) = signature(&[]);
    assert_eq!(code, Some(0));
    let (code, hand_signature) = signature(&["--net", "none"]);
    assert_eq!(code, Some(0));
    let (code, net_signature) = signature(&["--net", s(&net)]);
    assert_eq!(code, Some(0));
    assert!(net_signature
        .as_deref()
        .is_some_and(|l| l.starts_with("signature ")));
    assert_ne!(hand_signature, net_signature);
    assert_ne!(hand_signature, default_signature);
    assert_ne!(default_signature, net_signature);
    assert_eq!(signature(&["--net", s(&cut)]).0, Some(2));
    // `bench train`: the trainer on one thread and on two, the same net.
    let bench = |file: &Path| {
        let args = [
            "bench",
            "train",
            "--data",
            s(file),
            "--hidden",
            "8",
            "--epochs",
            "1",
            "--batch",
            "64",
        ];
        run(&args)
    };
    let out = bench(&data);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "{text}");
    assert!(text.contains("ratio 2/1 threads: "), "{text}");
    assert!(text.contains("the same net on 1 and 2 threads"), "{text}");
    assert_eq!(bench(&cut).status.code(), Some(2), "a net is not data");
    // A resumed finished run changes nothing; a run on data cut short is refused.
    let again = train(&["--resume", "--mirror"]);
    assert!(again.status.success());
    assert_eq!(fs::read(&net).expect("net"), bytes);
    let short = dir.path().join("short.bin");
    let d = fs::read(&data).expect("data");
    fs::write(&short, &d[..d.len() - 5]).expect("write");
    let out = run(&[
        "train",
        "--data",
        s(&short),
        "--out",
        s(&dir.path().join("x.nnue")),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cut short"));
    assert!(!dir.path().join("x.nnue").exists());
    // The same data and seed: the same net (another number of threads).
    let net2 = dir.path().join("n2.nnue");
    ok(&[
        "train",
        "--data",
        s(&data),
        "--valid",
        s(&valid),
        "--out",
        s(&net2),
        "--mirror",
        "--hidden",
        "8",
        "--epochs",
        "2",
        "--batch",
        "64",
        "--threads",
        "2",
    ]);
    assert_eq!(fs::read(&net2).expect("net2"), bytes);
}

#[test]
fn python_chess_switches_eval_file_as_a_gui_does() {
    if !common::have_python_chess() {
        return;
    }
    // A copy of the embedded net as a file, and a truncated one.
    let dir = tempfile::tempdir().expect("tempdir");
    let embedded = repo().join(format!(
        "crates/engine/nets/{}",
        learnbook::engine::default_net::EMBEDDED_NAME
    ));
    let bytes = fs::read(&embedded).expect("the embedded net's file");
    let copy = dir.path().join("copy.nnue");
    fs::write(&copy, &bytes).expect("write");
    let cut = dir.path().join("cut.nnue");
    fs::write(&cut, &bytes[..bytes.len() / 2]).expect("write");
    let stdout = common::python(&[
        s(&repo().join("tests/py/uci_evalfile.py")),
        common::bin(),
        s(&copy),
        s(&cut),
    ]);
    assert!(stdout.contains("gave the expected searches"), "{stdout}");
}
