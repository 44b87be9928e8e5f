from cluster.tiny_models import main

if __name__ == "__main__":  # importing the package's modules (a packaging check walks them) runs nothing
    raise SystemExit(main())
