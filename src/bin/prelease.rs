fn main() {
    eprintln!("prelease: not built yet");
    std::process::exit(1);
}
