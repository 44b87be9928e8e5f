from cluster.tiny_models import main

raise SystemExit(main())
