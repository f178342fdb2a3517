fn main() {
    eprintln!("pdvm: not built yet");
    std::process::exit(1);
}
