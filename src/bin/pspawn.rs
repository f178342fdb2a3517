fn main() {
    eprintln!("pspawn: not built yet");
    std::process::exit(1);
}
