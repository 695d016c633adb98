from harness.front.cli import main

main()
