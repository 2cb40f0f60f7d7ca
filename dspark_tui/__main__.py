from dspark_tui.cli import main

raise SystemExit(main())
