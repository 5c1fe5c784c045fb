import sys

if sys.argv[1:2] == ["worker"]:
    from research.workers import main as worker_main

    sys.exit(worker_main(sys.argv[2:]))

if sys.argv[1:2] == ["mcp"]:
    from research.mcpserver.stdio import main as mcp_main

    sys.exit(mcp_main(sys.argv[2:]))

from research.cli import main

sys.exit(main())
